"""The product catalog."""

PRODUCTS = [
    {"sku": "apple", "name": "Apple", "price": 0.5, "stock": 120},
    {"sku": "pear", "name": "Pear", "price": 0.75, "stock": 40},
    {"sku": "coffee", "name": "Coffee beans 1kg", "price": 18.0, "stock": 7},
    {"sku": "tea", "name": "Green tea", "price": 6.5, "stock": 15},
]


def load_catalog():
    """Return the products by sku."""
    return {p["sku"]: dict(p) for p in PRODUCTS}
