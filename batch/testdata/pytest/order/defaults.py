"""A library global default, as pyparsing's whitespace characters are."""

PRECISION = 2


def fmt(x):
    return "%.*f" % (PRECISION, x)
