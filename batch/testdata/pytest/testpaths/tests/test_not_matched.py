def check_never():
    assert False, "not matched by python_files"
