"""Compare pytest's JUnit report with ripple run's, testcase by testcase.

usage: compare.py PYTEST_XML RIPPLE_XML

Prints one line: collected counts, outcomes by kind for each, and the
testcases (classname::name, pytest's node id mangled as its junitxml does)
whose outcome differs or that only one of them has; then those testcases,
one per line (at most 20). Exit status 0 when nothing differs, 1 otherwise.
The outcome of a testcase is what pytest's junitxml encodes: error,
failure, xfail (skipped of type pytest.xfail), skipped, or passed.
"""

import collections
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        key = "%s::%s" % (case.get("classname"), case.get("name"))
        kind = "passed"
        if case.find("error") is not None:
            kind = "error"
        elif case.find("failure") is not None:
            kind = "failure"
        else:
            skipped = case.find("skipped")
            if skipped is not None:
                kind = "xfail" if skipped.get("type") == "pytest.xfail" else "skipped"
        out[key] = kind
    return out


def kinds(o):
    c = collections.Counter(o.values())
    return " ".join("%s=%d" % (k, c[k]) for k in ("passed", "failure", "error", "skipped", "xfail") if c[k])


def main():
    a, b = outcomes(sys.argv[1]), outcomes(sys.argv[2])
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    print("collected pytest=%d ripple=%d | pytest: %s | ripple: %s | differ=%d" % (len(a), len(b), kinds(a), kinds(b), len(differ)))
    for k in differ[:20]:
        print("  differs: %s pytest=%s ripple=%s" % (k, a.get(k, "-"), b.get(k, "-")))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
