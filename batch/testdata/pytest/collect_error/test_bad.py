import no_such_module_here


def test_never():
    pass
