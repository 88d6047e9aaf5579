package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/batch"
)

// entryLines lists entries as "id path:line [skip]".
func entryLines(es []batch.Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.ID() + " " + e.Location())
		if e.Skip != "" {
			b.WriteString(" skip")
		}
		if e.CollectError != nil {
			b.WriteString(" collect-error")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func discover(t *testing.T, root string, opts batch.DiscoverOptions) ([]batch.Entry, error) {
	t.Helper()
	return batch.Discover(context.Background(), python(t), root, opts)
}

func TestDiscoverFixture(t *testing.T) {
	t.Parallel()
	es, err := discover(t, fixture, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `test_crash:test_exit test_crash.py:4
test_crash:test_segfault test_crash.py:9
test_hang:test_hang_ignoring_sigint test_hang.py:5
test_math:test_add test_math.py:6
test_math:test_add_wrong test_math.py:11
test_math:test_raises_in_helper test_math.py:17
test_math:test_needs_fixture test_math.py:22 skip
test_math:test_marked_skip test_math.py:27 skip
test_math:TestCalc.test_method test_math.py:36
test_math:TestCalc.test_method_wrong test_math.py:40
test_print:test_prints test_print.py:4
test_print:test_prints_then_fails test_print.py:10
test_syntax test_syntax.py:1 collect-error
test_uses_broken:test_uses_broken test_uses_broken.py:4
`
	if got := entryLines(es); got != want {
		t.Errorf("entries:\n%s\nwant:\n%s", got, want)
	}
	for _, e := range es {
		switch e.ID() {
		case "test_math:test_needs_fixture":
			if !strings.Contains(e.Skip, "tmp_path") {
				t.Errorf("skip reason %q does not name the argument", e.Skip)
			}
		case "test_math:test_marked_skip":
			if e.Skip != "marked skip: not today" {
				t.Errorf("skip reason %q", e.Skip)
			}
		case "test_syntax":
			d := e.CollectError
			if d.Path != "test_syntax.py" || d.Location == nil || d.Location.Start.Line != 0 || !strings.Contains(d.Message, "SyntaxError") {
				t.Errorf("collect error %+v", d)
			}
		case "test_math:TestCalc.test_method":
			if item := e.StackItem(); item.ThisArgumentExpression != "__import__('_ripple_testing').case(TestCalc, 'test_method')" ||
				item.MethodPointer.DefinedOnType != "TestCalc" {
				t.Errorf("stack item %+v", item)
			}
		}
	}
}

func TestDiscoverRules(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"pkg/__init__.py":  "",
		"pkg/test_deep.py": "def test_deep():\n    pass\n",
		"calc_test.py": `import asyncio


def testsuffixless():
    pass


def test_twice():
    x = 1


def test_twice():
    x = 2


async def test_async():
    pass


def test_defaults(a=1, *args, **kwargs):
    pass


def test_kwonly(*, flag):
    pass


class TestMethods:
    def test_plain(self):
        pass

    @staticmethod
    def test_static():
        pass

    @classmethod
    def test_class(cls):
        pass

    def test_needs(self, tmp_path):
        pass

    def helper(self):
        pass


@unittest.skip("later")
class TestSkipped:
    def test_one(self):
        pass


class TestNew:
    def __new__(cls):
        return super().__new__(cls)

    def test_never(self):
        pass


class NotATest:
    def test_never(self):
        pass


def test_shadowed():
    pass


test_shadowed = None
`,
		"tests.py":               "def test_not_a_test_module():\n    pass\n",
		"test_data.txt":          "def test_x(): pass\n",
		".venv/test_venv.py":     "def test_hidden():\n    pass\n",
		"node_modules/test_n.py": "def test_hidden():\n    pass\n",
	})
	es, err := discover(t, root, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `calc_test:testsuffixless calc_test.py:4
calc_test:test_twice calc_test.py:12
calc_test:test_async calc_test.py:16 skip
calc_test:test_defaults calc_test.py:20
calc_test:test_kwonly calc_test.py:24 skip
calc_test:TestMethods.test_plain calc_test.py:29
calc_test:TestMethods.test_static calc_test.py:33
calc_test:TestMethods.test_class calc_test.py:37
calc_test:TestMethods.test_needs calc_test.py:40 skip
calc_test:TestSkipped.test_one calc_test.py:49 skip
pkg/test_deep.py:1
`
	// pkg/test_deep's id is pkg.test_deep:test_deep.
	want = strings.Replace(want, "pkg/test_deep.py:1", "pkg.test_deep:test_deep pkg/test_deep.py:1", 1)
	if got := entryLines(es); got != want {
		t.Errorf("entries:\n%s\nwant:\n%s", got, want)
	}
}

// Discovery parses; it never runs the project's code.
func TestDiscoverDoesNotImport(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"test_side.py": "open('imported', 'w').close()\nimport os\nos._exit(7)\n\n\ndef test_x():\n    pass\n",
		// The project's own json.py and ast.py must not shadow the
		// discovery script's imports.
		"json.py": "raise SystemExit('project json imported')\n",
		"ast.py":  "raise SystemExit('project ast imported')\n",
	})
	es, err := discover(t, root, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := entryLines(es); got != "test_side:test_x test_side.py:6\n" {
		t.Errorf("entries: %s", got)
	}
	if _, err := os.Stat(filepath.Join(root, "imported")); err == nil {
		t.Error("discovery ran the module's code")
	}
}

func TestDiscoverEntries(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"main.py":   "from helper import add\n\n\ndef main():\n    x = 1\n\n\nclass Job:\n    def run(self):\n        pass\n\n\nalias = main\n",
		"helper.py": "def add(a, b):\n    return a + b\n",
		"broken.py": "def main(:\n",
	})
	es, err := discover(t, root, batch.DiscoverOptions{Entries: []string{"main:Job.run", "helper:add", "main:alias", "broken:main", "main:main"}})
	if err != nil {
		t.Fatal(err)
	}
	// An assignment (alias) and a module that does not parse are left for
	// the engine to judge: their line is unknown.
	want := `broken:main broken.py
helper:add helper.py:1
main:alias main.py
main:main main.py:4
main:Job.run main.py:9
`
	if got := entryLines(es); got != want {
		t.Errorf("entries:\n%s\nwant:\n%s", got, want)
	}

	es, err = discover(t, root, batch.DiscoverOptions{})
	if err != nil || entryLines(es) != "main:main main.py:4\n" {
		t.Errorf("default entry: %v %q", err, entryLines(es))
	}
}

func TestDiscoverErrors(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"main.py":   "def other():\n    pass\n",
		"tool.py":   "def run():\n    pass\n",
		"test_e.py": "def helper():\n    pass\n",
	})
	empty := project(t, map[string]string{"lib.py": "x = 1\n"})
	cases := []struct {
		name string
		root string
		opts batch.DiscoverOptions
		err  error
		want string
	}{
		{"bad pointer", root, batch.DiscoverOptions{Entries: []string{"nocolon"}}, batch.ErrUsage, `--entry "nocolon"`},
		{"missing module", root, batch.DiscoverOptions{Entries: []string{"nosuch:main"}}, batch.ErrUsage, "module nosuch is not in the project"},
		{"missing function", root, batch.DiscoverOptions{Entries: []string{"tool:nope"}}, batch.ErrUsage, "tool.py defines no nope"},
		{"missing method", root, batch.DiscoverOptions{Entries: []string{"tool:run.x"}}, batch.ErrUsage, "tool.py defines no run.x"},
		{"default without main.py", empty, batch.DiscoverOptions{}, batch.ErrNoEntries, "has no main.py"},
		{"no test module", empty, batch.DiscoverOptions{Tests: true}, batch.ErrNoEntries, "no test module"},
		{"no test in modules", root, batch.DiscoverOptions{Tests: true}, batch.ErrNoEntries, "no test function"},
	}
	for _, c := range cases {
		_, err := discover(t, c.root, c.opts)
		if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %v naming %q", c.name, err, c.err, c.want)
		}
	}
	// PROTOCOL.md 7.1: a main.py without a function main runs as a script
	// by default, and module:__main__ is an entry like any other.
	for _, opts := range []batch.DiscoverOptions{{}, {Entries: []string{"main:__main__"}}} {
		es, err := discover(t, root, opts)
		if err != nil || entryLines(es) != "main:__main__ main.py:1\n" {
			t.Errorf("entries of %+v: %v %q, want main:__main__", opts, err, entryLines(es))
		}
	}
}

func TestDiscoverBrokenInterpreter(t *testing.T) {
	t.Parallel()
	py := python(t)
	py.Path = filepath.Join(t.TempDir(), "no-python")
	_, err := batch.Discover(context.Background(), py, fixture, batch.DiscoverOptions{Tests: true})
	if !errors.Is(err, batch.ErrDiscovery) || !strings.Contains(err.Error(), "no-python") {
		t.Errorf("err = %v, want ErrDiscovery naming the interpreter", err)
	}
}

func TestIsTestFile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"test_a.py": true, "a_test.py": true, "pkg/test_b.py": true, "test.py": false, "tests.py": false,
		"test_a.txt": false, "atest.py": false, "contest_a.py": false, "test_.py": true,
	} {
		if got := batch.IsTestFile(name); got != want {
			t.Errorf("IsTestFile(%q) = %v, want %v", name, got, want)
		}
	}
}

// Conditional marks are decided at discovery, with sys, os and platform
// in scope; a condition that needs the module's names is reported, and
// its mark ignored.
func TestDiscoverConditionalMarks(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"test_module_marks.py": `import sys

import pytest

pytestmark = [pytest.mark.xfail(reason="module"), pytest.mark.skipif(sys.platform == "no-such-platform", reason="x")]


def test_in_marked_module():
    pass


class TestInMarkedModule:
    pytestmark = pytest.mark.skipif(sys.version_info >= (3,), reason="class")

    def test_method(self):
        pass
`,
		"test_marks.py": `import sys
import unittest

import pytest

np = None


@pytest.mark.skipif(sys.version_info >= (3,), reason="python 3")
def test_skipif_true():
    pass


@pytest.mark.skipif("sys.platform == 'no-such-platform'")
def test_skipif_false_string():
    pass


@unittest.skipUnless(sys.platform == "no-such-platform", "elsewhere only")
def test_skip_unless():
    pass


@pytest.mark.skipif(np is None, reason="needs numpy")
def test_skipif_module_name():
    pass


@pytest.mark.skipif(reason="always")
def test_skipif_no_condition():
    pass


@pytest.mark.xfail(condition=sys.platform == "no-such-platform")
def test_xfail_keyword_condition():
    pass


@pytest.mark.xfail(reason="bug 12")
def test_xfail():
    pass


@pytest.mark.xfail(sys.platform == "no-such-platform", reason="elsewhere")
def test_xfail_condition_false():
    pass


@pytest.mark.xfail("os.sep == '/'", strict=True)
def test_xfail_strict_string():
    pass


@pytest.mark.xfail(run=False, reason="hangs")
def test_xfail_not_run():
    pass


@unittest.expectedFailure
def test_expected_failure():
    pass


@pytest.mark.xfail(reason="class")
class TestMarked:
    def test_method(self):
        pass
`})
	es, err := discover(t, root, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	type marks struct {
		skip       string
		xfail      *batch.XFailMark
		unresolved []string
	}
	got := make(map[string]marks)
	for _, e := range es {
		name := e.Pointer.Qualname()
		if e.Pointer.Module == "test_module_marks" {
			name = "module " + name
		}
		got[name] = marks{e.Skip, e.XFail, e.UnresolvedMarks}
	}
	want := map[string]marks{
		"test_skipif_true":                      {skip: "marked skipif: python 3"},
		"test_skipif_false_string":              {},
		"test_skip_unless":                      {skip: "marked skipUnless: elsewhere only"},
		"test_skipif_module_name":               {unresolved: []string{"np is None"}},
		"test_skipif_no_condition":              {skip: "marked skipif: always"},
		"test_xfail_keyword_condition":          {},
		"test_xfail":                            {xfail: &batch.XFailMark{Reason: "bug 12", Run: true}},
		"test_xfail_condition_false":            {},
		"test_xfail_strict_string":              {xfail: &batch.XFailMark{Strict: true, Run: true}},
		"test_xfail_not_run":                    {xfail: &batch.XFailMark{Reason: "hangs"}},
		"test_expected_failure":                 {xfail: &batch.XFailMark{Run: true}},
		"TestMarked.test_method":                {xfail: &batch.XFailMark{Reason: "class", Run: true}},
		"module test_in_marked_module":          {xfail: &batch.XFailMark{Reason: "module", Run: true}},
		"module TestInMarkedModule.test_method": {skip: "marked skipif: class", xfail: &batch.XFailMark{Reason: "module", Run: true}},
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d:\n%s", len(got), len(want), entryLines(es))
	}
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s not discovered", name)
		case g.skip != w.skip:
			t.Errorf("%s: skip %q, want %q", name, g.skip, w.skip)
		case (g.xfail == nil) != (w.xfail == nil) || (g.xfail != nil && *g.xfail != *w.xfail):
			t.Errorf("%s: xfail %+v, want %+v", name, g.xfail, w.xfail)
		case strings.Join(g.unresolved, "|") != strings.Join(w.unresolved, "|"):
			t.Errorf("%s: unresolved %q, want %q", name, g.unresolved, w.unresolved)
		}
	}
}

// unittest.TestCase subclasses are collected whatever their name (as
// far as the module shows: a base named TestCase or a class of the module
// that is one), with the tests they inherit from classes of the module.
func TestDiscoverUnitTestCases(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_cases.py": `import unittest
from unittest import TestCase

import helpers


class ParserTests(unittest.TestCase):
    def test_parses(self):
        self.assertEqual(1, 1)


class WithSetUp(TestCase):
    def setUp(self):
        self.x = 1

    def test_uses_setup(self):
        self.assertEqual(self.x, 1)


class InheritsSetUp(WithSetUp):
    def test_inherited(self):
        pass


class HidesOne(WithSetUp):
    test_uses_setup = None  # not a test here, as at run time


class ForeignBase(helpers.Base, unittest.TestCase):
    def test_foreign(self):
        pass


class NotATest:
    def test_ignored(self):
        pass
`})
	es, err := discover(t, root, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	// A class's tests include those it inherits from a class of the
	// module (InheritsSetUp.test_uses_setup, at its def's line); fixtures
	// (setUp, a base's, one a foreign base may have) no longer skip a test:
	// the kernel runs them (TestRunUnitTestFixtures).
	want := `test_cases:ParserTests.test_parses test_cases.py:8
test_cases:InheritsSetUp.test_uses_setup test_cases.py:16
test_cases:WithSetUp.test_uses_setup test_cases.py:16
test_cases:InheritsSetUp.test_inherited test_cases.py:21
test_cases:ForeignBase.test_foreign test_cases.py:30
`
	if got := entryLines(es); got != want {
		t.Fatalf("entries:\n%s\nwant:\n%s", got, want)
	}
	for _, e := range es {
		if !e.UnitTest {
			t.Errorf("%s is not marked unittest", e.ID())
		}
		if e.Skip != "" {
			t.Errorf("%s: skipped: %q", e.ID(), e.Skip)
		}
	}
	if item := es[0].StackItem(); item.ThisArgumentExpression != "__import__('_ripple_testing').case(ParserTests, 'test_parses')" {
		t.Errorf("this argument %q", item.ThisArgumentExpression)
	}
}

// pytest.mark.parametrize: one entry per case, named as pytest 7.2.1
// names them (checked against it: `pytest --collect-only` lists the same
// ids for this module, except that repeated ids follow pytest 8's rule
// and the values marked below, which pytest computes by importing it),
// with the source of each case's arguments in the order of the function's
// parameters.
func TestDiscoverParametrize(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_par.py": `import pytest

VALUES = [1, 2]


@pytest.mark.parametrize("a,b", [(1, 2), (3, 4)])
def test_add(a, b):
    pass


@pytest.mark.parametrize("s", ["x", "é", b"\x00y", None, 1.5, -3, True, [1], "a\nb"])
def test_ids(s):
    pass


@pytest.mark.parametrize("x", [0, 1])
@pytest.mark.parametrize("y", [2, 3])
def test_product(x, y):
    pass


@pytest.mark.parametrize("n", [1, 1, 2, 11, 1])
def test_dupes(n):
    pass


@pytest.mark.parametrize(("n", "m"), [pytest.param(1, 2, id="one"), pytest.param(5, 6, marks=pytest.mark.skip(reason="no")),
                                      pytest.param(7, 8, marks=[pytest.mark.xfail(reason="bug")])])
def test_params(m, n):
    pass


@pytest.mark.parametrize("v", [VALUES[0] +
                               1], ids=["computed"])
def test_expression(v):
    pass


@pytest.mark.parametrize("v", VALUES)
def test_not_literal(v):
    pass


@pytest.mark.parametrize("v", [])
def test_empty(v):
    pass


@pytest.mark.parametrize("v", [1])
def test_fixture(v, tmp_path):
    pass


@pytest.mark.parametrize("z", [1])
def test_extra(v):
    pass


LIMIT = 5
TWICE = 1
TWICE = 2


def unknown():
    return 7


# Ids of values pytest computes at import: constant expressions are
# folded; a call and a name bound twice get argname+index (pytest: 7, 2).
@pytest.mark.parametrize("v", [2 ** 10, "ab" * 2, LIMIT, -(3), unknown(), TWICE, 7 / 2, not 0, "x" * 100000])
def test_fold(v):
    pass


@pytest.mark.parametrize("x", [1, 2])
class TestCls:
    SIDES = (3, 4)

    @pytest.mark.parametrize("y", ["a"])
    def test_m(self, x, y):
        pass

    # A method's own mark sees the class's attributes, as the decorator
    # did in the class body.
    @pytest.mark.parametrize("side", [SIDES[1], LIMIT])
    def test_class_attribute(self, x, side):
        pass
`})
	es, err := discover(t, root, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, e := range es {
		fmt.Fprintf(&got, "%s", e.ID())
		if e.Case != nil {
			fmt.Fprintf(&got, " %q", e.Case.Args)
		}
		if e.Skip != "" {
			fmt.Fprintf(&got, " skip=%q", e.Skip)
		}
		if e.XFail != nil {
			fmt.Fprintf(&got, " xfail=%q", e.XFail.Reason)
		}
		got.WriteString("\n")
	}
	want := `test_par:test_add[1-2] ["(1)" "(2)"]
test_par:test_add[3-4] ["(3)" "(4)"]
test_par:test_ids[x] ["(\"x\")"]
test_par:test_ids[\xe9] ["(\"é\")"]
test_par:test_ids[\x00y] ["(b\"\\x00y\")"]
test_par:test_ids[None] ["(None)"]
test_par:test_ids[1.5] ["(1.5)"]
test_par:test_ids[-3] ["(-3)"]
test_par:test_ids[True] ["(True)"]
test_par:test_ids[s7] ["([1])"]
test_par:test_ids[a\nb] ["(\"a\\nb\")"]
test_par:test_product[2-0] ["(0)" "(2)"]
test_par:test_product[2-1] ["(1)" "(2)"]
test_par:test_product[3-0] ["(0)" "(3)"]
test_par:test_product[3-1] ["(1)" "(3)"]
test_par:test_dupes[1_0] ["(1)"]
test_par:test_dupes[1_1] ["(1)"]
test_par:test_dupes[2] ["(2)"]
test_par:test_dupes[11] ["(11)"]
test_par:test_dupes[1_2] ["(1)"]
test_par:test_params[one] ["(2)" "(1)"]
test_par:test_params[5-6] ["(6)" "(5)"] skip="marked skip: no"
test_par:test_params[7-8] ["(8)" "(7)"] xfail="bug"
test_par:test_expression[computed] ["(VALUES[0] +\n                               1)"]
test_par:test_not_literal skip="parametrize values VALUES are not a literal list: ripple run cannot expand them without importing the module"
test_par:test_empty skip="parametrize got an empty parameter set"
test_par:test_fixture skip="takes arguments (tmp_path) that no parametrize mark gives: pytest fixtures are not supported by ripple run"
test_par:test_extra skip="parametrize names z, which test_extra does not take as a required argument"
test_par:test_fold[1024] ["(2 ** 10)"]
test_par:test_fold[abab] ["(\"ab\" * 2)"]
test_par:test_fold[5] ["(LIMIT)"]
test_par:test_fold[-3] ["(-(3))"]
test_par:test_fold[v4] ["(unknown())"]
test_par:test_fold[v5] ["(TWICE)"]
test_par:test_fold[3.5] ["(7 / 2)"]
test_par:test_fold[True] ["(not 0)"]
test_par:test_fold[v8] ["(\"x\" * 100000)"]
test_par:TestCls.test_m[a-1] ["(1)" "(\"a\")"]
test_par:TestCls.test_m[a-2] ["(2)" "(\"a\")"]
test_par:TestCls.test_class_attribute[4-1] ["(1)" "__import__('builtins').eval('(SIDES[1])', globals(), vars(TestCls))"]
test_par:TestCls.test_class_attribute[4-2] ["(2)" "__import__('builtins').eval('(SIDES[1])', globals(), vars(TestCls))"]
test_par:TestCls.test_class_attribute[5-1] ["(1)" "(LIMIT)"]
test_par:TestCls.test_class_attribute[5-2] ["(2)" "(LIMIT)"]
`
	if got.String() != want {
		t.Errorf("entries:\n%s\nwant:\n%s", got.String(), want)
	}
}

// What pytest would run around a test and ripple run does not is listed
// for the console to say: autouse fixtures of the module, the class and
// the conftest.py files from the test's directory up to the project root
// (nearest first), and module-level xunit functions; a skipped test lists
// nothing. The console names each once per module with its test count.
func TestDiscoverNotRunFixtures(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"conftest.py":       "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef env():\n    pass\n\n\n@pytest.fixture\ndef db():\n    return 1\n",
		"tests/conftest.py": "import pytest\n\n\n@pytest.fixture(autouse=True, name='reset')\ndef _reset():\n    yield\n",
		"tests/test_a.py": `from unittest import mock

import pytest

from helpers import retry


def setup_module(module):
    pass


def setup_function(function):
    pass


@pytest.fixture(autouse=True)
def local():
    pass


def test_one():
    pass


def test_two(db):
    pass


class TestC:
    @pytest.fixture(autouse=True)
    def per_class(self):
        pass

    def test_m(self):
        pass


@retry
@pytest.mark.slow
def test_wrapped():
    pass


@mock.patch("os.getcwd")
def test_patched(getcwd):
    pass
`,
		"test_plain.py": "def test_p():\n    pass\n",
	})
	es, err := discover(t, root, batch.DiscoverOptions{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]string)
	for _, e := range es {
		got[e.ID()] = strings.Join(e.NotRun, "; ")
	}
	module := "autouse fixture reset (tests/conftest.py); autouse fixture env (conftest.py); autouse fixture local; setup_module"
	want := map[string]string{
		"tests.test_a:test_one":     module + "; setup_function",
		"tests.test_a:test_two":     "",
		"tests.test_a:TestC.test_m": module + "; autouse fixture per_class",
		"test_plain:test_p":         "autouse fixture env (conftest.py)",
		// A test's decorators other than marks are not applied.
		"tests.test_a:test_wrapped": module + "; decorator @retry; setup_function",
		"tests.test_a:test_patched": "",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: not run %q, want %q", id, got[id], w)
		}
	}
	for _, e := range es {
		if e.ID() == "tests.test_a:test_patched" && !strings.Contains(e.Skip, `which its decorator (mock.patch("os.getcwd")) may supply`) {
			t.Errorf("test_patched: skip reason %q", e.Skip)
		}
	}
	var out bytes.Buffer
	batch.NewConsole(&out, batch.ConsoleOptions{}).Started(es, 1)
	for _, line := range []string{
		"ripple run: tests/test_a.py: autouse fixture env (conftest.py) is not run by ripple run: 3 tests run without it\n",
		"ripple run: tests/test_a.py: setup_function is not run by ripple run: 2 tests run without it\n",
		"ripple run: tests/test_a.py: decorator @retry is not run by ripple run: 1 test runs without it\n",
		"ripple run: test_plain.py: autouse fixture env (conftest.py) is not run by ripple run: 1 test runs without it\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("console lacks %q:\n%s", line, out.String())
		}
	}
}
