import os


def test_fd_write():
    os.write(1, b"two: straight to fd 1\n")


def test_no_newline():
    print("two: no newline", end="")
