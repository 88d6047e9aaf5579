from helpers.base import BaseChecks


class TestOne(BaseChecks):
    pass


class TestTwo(BaseChecks):
    factor = 2

    def test_own(self):
        assert self.factor == 2
