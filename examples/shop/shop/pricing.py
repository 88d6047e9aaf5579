"""Pricing rules: enter apply_discount from main to watch its statements."""


def order_total(lines):
    amounts = [line["amount"] for line in lines]
    total = sum(amounts)
    return round(total, 2)


def apply_discount(amount, percent):
    rate = percent / 100
    discount = round(amount * rate, 2)
    result = amount - discount
    return round(result, 2)
