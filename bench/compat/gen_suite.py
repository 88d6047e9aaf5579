"""Synthetic suites for bench/compat: the shapes real suites have that a
runner of warm kernels can lose on.

    python3 gen_suite.py small DIR [TESTS]     # TESTS fast tests (default 300) in 15 modules
    python3 gen_suite.py deselect DIR [TESTS]  # TESTS tests (default 20000), addopts -m "not stress"
                                               # deselects all but 1 in 20 (click's shape)
"""

import os
import sys


def small(root: str, tests: int) -> None:
    modules = 15
    for m in range(modules):
        n = tests // modules + (1 if m < tests % modules else 0)
        with open(os.path.join(root, "test_small_%02d.py" % m), "w") as f:
            f.write("import pytest\n\n\n")
            f.write("@pytest.fixture\ndef value():\n    return %d\n\n\n" % m)
            for i in range(n):
                if i % 3 == 0:
                    f.write("def test_plain_%d():\n    assert %d + 1 == %d\n\n\n" % (i, i, i + 1))
                elif i % 3 == 1:
                    f.write("def test_fixture_%d(value):\n    assert value == %d\n\n\n" % (i, m))
                else:
                    f.write("@pytest.mark.parametrize('x', [1, 2])\ndef test_param_%d(x):\n    assert x in (1, 2)\n\n\n" % i)
    with open(os.path.join(root, "pytest.ini"), "w") as f:
        f.write("[pytest]\n")


def deselect(root: str, tests: int) -> None:
    modules = 40
    per = tests // modules
    for m in range(modules):
        with open(os.path.join(root, "test_sel_%02d.py" % m), "w") as f:
            f.write("import pytest\n\n\n")
            f.write("@pytest.mark.stress\n@pytest.mark.parametrize('n', range(%d))\n" % (per - per // 20))
            f.write("def test_stress(n):\n    assert n >= 0\n\n\n")
            f.write("@pytest.mark.parametrize('n', range(%d))\n" % (per // 20))
            f.write("def test_quick(n):\n    assert n * 2 == n + n\n")
    with open(os.path.join(root, "pytest.ini"), "w") as f:
        f.write('[pytest]\naddopts = -m "not stress"\nmarkers =\n    stress: slow, deselected by default\n')


def main() -> None:
    kind, root = sys.argv[1], sys.argv[2]
    os.makedirs(root, exist_ok=True)
    if kind == "small":
        small(root, int(sys.argv[3]) if len(sys.argv) > 3 else 300)
    elif kind == "deselect":
        deselect(root, int(sys.argv[3]) if len(sys.argv) > 3 else 20000)
    else:
        sys.exit("gen_suite.py: unknown kind %r (small, deselect)" % kind)


if __name__ == "__main__":
    main()
