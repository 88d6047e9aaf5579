import time


def double(n):
    print(f"doubling {n}")
    m = n * 2
    return m


def slow_sum(x):
    total = 0
    for i in range(600):
        time.sleep(0.05)
        total += i
    return total + x
