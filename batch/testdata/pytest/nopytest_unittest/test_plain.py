import unittest


class TestPlain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = [1]

    def test_ok(self):
        self.assertEqual(self.shared, [1])

    def test_fails(self):
        self.assertEqual(1, 2)

    @unittest.skip("not now")
    def test_skipped(self):
        pass
