import defaults


def test_default_precision():
    assert defaults.fmt(1) == "1.00"
