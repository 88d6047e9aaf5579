"""The interpreter the pytest-dependent tests use: this one when pytest
imports here, else Debian's /usr/bin/python3 (.ci/run installs
python3-pytest for it; the suite itself often runs on another python3
first on PATH). Under CI=true a missing pytest fails instead of skipping."""

import importlib.util
import os
import subprocess
import sys
import unittest
from typing import Optional

DEBIAN_PYTHON = "/usr/bin/python3"


def _imports_pytest(python: str) -> bool:
    return os.path.exists(python) and subprocess.run(
        [python, "-c", "import pytest"], capture_output=True).returncode == 0


def pytest_python() -> Optional[str]:
    """An interpreter that has pytest, or None."""
    if importlib.util.find_spec("pytest") is not None:
        return sys.executable
    if _imports_pytest(DEBIAN_PYTHON):
        return DEBIAN_PYTHON
    return None


def need_pytest_python(case: unittest.TestCase) -> str:
    """pytest_python() for case, failing it under CI=true and skipping it
    elsewhere when there is none."""
    python = pytest_python()
    if python is None:
        if os.environ.get("CI") == "true":
            case.fail("no python3 with pytest (.ci/run installs python3-pytest)")
        case.skipTest("no python3 with pytest")
    assert python is not None
    return python
