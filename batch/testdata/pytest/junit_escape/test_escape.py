"""Characters pytest's junitxml escapes as #xNN: control characters, and
(pytest's pattern reads its last range wrongly) any above U+FFFF."""

import sys


def test_panda_in_message():
    zone = "🐼"
    assert zone == "panda"


def test_bell_in_output():
    print("bell \x07 and panda 🐼 on stdout")
    sys.stderr.write("é and 𝄞 on stderr\n")
    assert False, "fails so that its output is kept"


def test_passes():
    pass
