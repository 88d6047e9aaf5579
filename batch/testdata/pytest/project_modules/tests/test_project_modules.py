"""Project modules import as under pytest, through Python's own machinery:
nothing of ripple's engine is seen in a test run."""
import importlib.machinery
import importlib.resources
import inspect
import os
import sys

import pytest

import pkg
import pkg.mod


def test_loader_is_pythons():
    assert isinstance(pkg.mod.__loader__, importlib.machinery.SourceFileLoader)
    assert pkg.mod.__spec__.origin.endswith(os.path.join("pkg", "mod.py"))


def test_package_data():
    assert importlib.resources.files(pkg).joinpath("data.txt").read_text() == "hello from the package\n"


def test_getsource():
    assert "return 42" in inspect.getsource(pkg.mod.answer)


def test_no_ripple_module():
    with pytest.raises(ImportError):
        import ripple  # noqa: F401


def test_no_ripple_hooks():
    assert not os.environ.get("MPLBACKEND", "").startswith("module://ripple")
    assert not [f for f in sys.meta_path if "ripple" in type(f).__module__ or type(f).__name__ in ("_ProjectFinder", "_DisplayFinder", "_IPythonHook")]
