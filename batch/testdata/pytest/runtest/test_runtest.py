import unittest


class OnlyRunTest(unittest.TestCase):
    def runTest(self):
        self.assertEqual(1 + 1, 2)


class WithSetUp(unittest.TestCase):
    def setUp(self):
        self.value = 41

    def runTest(self):
        self.assertEqual(self.value, 42)
