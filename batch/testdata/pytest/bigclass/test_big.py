def _make(i):
    def test(self):
        assert i >= 0
    test.__name__ = "test_%04d" % i
    return test


class TestBig:
    for _i in range(5000):
        locals()["test_%04d" % _i] = _make(_i)
    del _i
