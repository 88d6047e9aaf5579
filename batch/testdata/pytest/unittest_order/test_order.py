import unittest

ORDER = []


class TestOrder(unittest.TestCase):
    def test_c(self):
        ORDER.append("c")

    def test_a(self):
        ORDER.append("a")

    def test_b(self):
        ORDER.append("b")

    def test_z_last(self):
        self.assertEqual(ORDER, ["a", "b", "c"])
