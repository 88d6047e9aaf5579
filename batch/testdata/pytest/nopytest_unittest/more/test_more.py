"""In a directory that is not a package: unittest's discovery of the
project does not reach it; naming the directory (or this file) runs it."""
import unittest


class TestMore(unittest.TestCase):
    def test_more(self):
        self.assertEqual(sum([1, 2]), 3)
