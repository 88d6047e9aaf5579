def answer():
    """The answer."""
    return 42
