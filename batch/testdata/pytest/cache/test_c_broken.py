import no_such_module_here  # noqa: F401


def test_never():
    pass
