"""A failing assert whose message shows the values: it needs pytest's
assertion rewriting, which the run takes from ripple's cache after the
first run (PYTHONDONTWRITEBYTECODE keeps pytest from caching it)."""


def test_values():
    x = 2
    assert x + 1 == 4


def test_passes():
    assert [1, 2] == [1, 2]
