"""A shopping cart."""


class Cart:
    def __init__(self):
        self.items = {}

    def add(self, product, quantity):
        if quantity <= 0:
            raise ValueError(f"quantity must be positive, got {quantity}")
        sku = product["sku"]
        line = self.items.setdefault(sku, {"product": product, "quantity": 0})
        line["quantity"] += quantity

    def lines(self):
        """One dict per line: worth a table visualization."""
        return [
            {
                "sku": sku,
                "name": line["product"]["name"],
                "quantity": line["quantity"],
                "amount": round(line["product"]["price"] * line["quantity"], 2),
            }
            for sku, line in sorted(self.items.items())
        ]
