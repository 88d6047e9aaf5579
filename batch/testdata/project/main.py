from helper import add


def main():
    total = add(2, 3)
    print("total is", total)
