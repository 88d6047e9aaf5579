"""The shop package: a catalog, a cart and pricing rules."""
