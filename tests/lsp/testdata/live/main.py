from helpers import double, slow_sum


def main():
    a = 3 * 2
    b = double(a)
    s = "🎉"; c = a + 1
    d = b * 2
    return d


def slow():
    x = 2 - 1
    y = slow_sum(x)
    return y


answer = 40 + 2


def crash():
    import os
    os._exit(3)
