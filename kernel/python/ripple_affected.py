"""Runs ripple_kernel.affected as a script (kernel/labels.go starts it with
python -I, which leaves this directory off sys.path)."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _install() -> None:
    path = os.path.join(_HERE, "ripple_kernel", "loader.py")
    namespace = {"__name__": "ripple_kernel_bootstrap", "__file__": path}
    with open(path, "rb") as f:
        exec(compile(f.read(), path, "exec", dont_inherit=True), namespace)
    namespace["install"](_HERE)


if __name__ == "__main__":
    _install()
    from ripple_kernel import affected

    sys.exit(affected.main())
