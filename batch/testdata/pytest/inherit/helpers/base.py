class BaseChecks:
    factor = 1

    def test_inherited(self):
        assert self.factor * 2 == 2

    def test_inherited_fails_for_two(self):
        assert self.factor == 1
