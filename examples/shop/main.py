"""A tiny shop: the statements of main() are what ripple shows live.

Run it with ripple (from the repository root):

    go run ./cmd/ripple serve examples/shop
"""

from shop.catalog import load_catalog
from shop.cart import Cart
from shop.pricing import apply_discount, order_total

TAX_RATE = 0.2


def main():
    catalog = load_catalog()
    cart = Cart()
    cart.add(catalog["apple"], 6)
    cart.add(catalog["pear"], 3)
    cart.add(catalog["coffee"], 1)
    lines = cart.lines()
    subtotal = order_total(lines)
    discounted = apply_discount(subtotal, percent=10)
    tax = round(discounted * TAX_RATE, 2)
    total = round(discounted + tax, 2)
    print(f"total due: {total}")
    return total


if __name__ == "__main__":
    main()
