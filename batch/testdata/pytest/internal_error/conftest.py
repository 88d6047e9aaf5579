"""A hook that raises: pytest's internal error (exit status 3)."""


def pytest_collection_modifyitems(items):
    raise RuntimeError("broken hook")
