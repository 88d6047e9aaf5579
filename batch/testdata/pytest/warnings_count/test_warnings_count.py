"""Each warning counts in pytest's last line ("N warnings"), however many
come at once: pyparsing's suite gets 18 from matplotlib at collection."""

import warnings

for line in range(3):
    warnings.warn(UserWarning("at import, %d of 3" % line))


def test_two_warnings():
    warnings.warn(UserWarning("first"))
    warnings.warn(DeprecationWarning("second"))


def test_one_warning():
    warnings.warn(UserWarning("only"))


def test_none():
    pass
