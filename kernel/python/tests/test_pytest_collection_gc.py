"""pytest_session.collection_gc: the collector's first threshold is high
while pytest collects and the interpreter's again after, unless the
suite's code set its own meanwhile or collection was off."""

import gc
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ripple_kernel import pytest_session  # noqa: E402


class CollectionGCTest(unittest.TestCase):
    def setUp(self):
        self.saved = gc.get_threshold()
        gc.set_threshold(700, 10, 10)

    def tearDown(self):
        gc.set_threshold(*self.saved)

    def test_raised_while_collecting_then_back(self):
        with pytest_session.collection_gc():
            self.assertEqual(gc.get_threshold(), (pytest_session.COLLECTION_GC_THRESHOLD, 10, 10))
        self.assertEqual(gc.get_threshold(), (700, 10, 10))

    def test_back_after_an_error(self):
        with self.assertRaises(KeyError):
            with pytest_session.collection_gc():
                raise KeyError("x")
        self.assertEqual(gc.get_threshold(), (700, 10, 10))

    def test_a_threshold_the_suite_set_stays(self):
        with pytest_session.collection_gc():
            gc.set_threshold(1000, 5, 5)  # a conftest.py's
        self.assertEqual(gc.get_threshold(), (1000, 5, 5))

    def test_collection_off_is_left_alone(self):
        gc.set_threshold(0, 10, 10)
        with pytest_session.collection_gc():
            self.assertEqual(gc.get_threshold(), (0, 10, 10))
        self.assertEqual(gc.get_threshold(), (0, 10, 10))


if __name__ == "__main__":
    unittest.main()
