class Fragile:
    def __init__(self):
        self.reprs = 0

    def __repr__(self):
        self.reprs += 1
        return "Fragile(%d)" % self.reprs


def test_repr_not_called():
    value = Fragile()
    other = value
    assert other.reprs == 0
