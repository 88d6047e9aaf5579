"""unittest tests of three kinds: a TestCase's method, the doctests of a
module and a FunctionTestCase (both added by load_tests)."""

import doctest
import unittest

import mylib


class TestLib(unittest.TestCase):
    def test_double(self):
        self.assertEqual(mylib.double(3), 6)


def check_function():
    assert mylib.halve(2) == 1


def load_tests(loader, tests, pattern):
    tests.addTests(doctest.DocTestSuite(mylib))
    tests.addTest(unittest.FunctionTestCase(check_function))
    return tests
