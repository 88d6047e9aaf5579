import time


def main():
    n = 3
    total = n + 1
    return total


def slow():
    a = 3 * 2
    time.sleep(120)
    b = a + 1
    return b
