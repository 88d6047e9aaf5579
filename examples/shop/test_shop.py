"""Tests of the shop, runnable with `ripple run examples/shop --tests`."""

from shop.cart import Cart
from shop.catalog import load_catalog
from shop.pricing import apply_discount, order_total


def test_discount():
    price = apply_discount(100, percent=10)
    assert price == 90


def test_cart_lines():
    catalog = load_catalog()
    cart = Cart()
    cart.add(catalog["tea"], 2)
    lines = cart.lines()
    assert lines[0]["amount"] == 13.0


def test_order_total():
    lines = [{"amount": 1.25}, {"amount": 2.5}]
    total = order_total(lines)
    assert total == 3.75


class TestCart:
    def test_empty(self):
        cart = Cart()
        assert cart.lines() == []
