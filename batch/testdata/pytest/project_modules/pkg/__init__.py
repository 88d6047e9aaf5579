"""A package of the project, imported by its tests."""
