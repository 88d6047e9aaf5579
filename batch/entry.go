package batch

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ripple-run/ripple/protocol"
)

// Entry is one function ripple run runs, in an execution context of its
// own.
type Entry struct {
	// Pointer names the function; DefinedOnType is set for a test method,
	// which runs on a fresh instance of its class.
	Pointer protocol.MethodPointer
	// Path is the module's file, relative to the project root, with
	// forward slashes.
	Path string
	// Line is the 1-based line of the function's def, 0 when discovery
	// could not place it (a function bound by an assignment).
	Line int
	// Skip, when set, is why the entry is reported as skipped without
	// running (it takes arguments, it is marked skip, a skipif condition
	// holds).
	Skip string
	// XFail, when set, says the entry is expected to fail
	// (pytest.mark.xfail, unittest.expectedFailure): a failure is
	// reported xfailed and a pass xpassed, neither failing the run
	// unless the mark is strict.
	XFail *XFailMark
	// UnresolvedMarks are the conditions of skipif/xfail marks that
	// discovery could not decide without importing the module (they use
	// its names); those marks are ignored and the entry runs.
	UnresolvedMarks []string
	// UnitTest: a test method of a unittest.TestCase subclass, as far as
	// discovery sees (parametrize marks do not apply to it). The kernel's
	// set-up tells a TestCase from another class at run time, whatever
	// discovery saw (a base from another module).
	UnitTest bool
	// CollectError, when set, is why the module could not be read (a
	// syntax error): the entry stands for the whole module and fails with
	// it. Pointer.Name is empty then.
	CollectError *protocol.Diagnostic
	// Case, when set, is one case of a parametrized test: the function
	// runs with the case's arguments.
	Case *Case
	// NotRun names what pytest would run around the test and ripple run
	// does not: autouse fixtures (with the conftest.py defining them) and
	// module-level xunit functions (setup_module...).
	NotRun []string

	// NodeID is pytest's node id of a test run by pytest in the kernels
	// (ripple run --tests): the entry's id in every report. The fields
	// above that describe discovery are unused then.
	NodeID string
	// JUnitClass and JUnitName are the testcase's classname and name as
	// pytest's --junitxml writes them for NodeID.
	JUnitClass, JUnitName string
	// Scope is the group the entry runs in: its module (pytest-xdist's
	// loadfile): a module's tests run on one kernel, in collection order,
	// so module state, module and class fixtures are as under pytest.
	Scope string
}

// Case is one case of a pytest.mark.parametrize'd test.
type Case struct {
	// ID is pytest's id of the case, "1-2" in test_add[1-2].
	ID string `json:"id"`
	// Index is the case's place among its function's cases (report order).
	Index int `json:"index"`
	// Args are the source of the arguments, in the order of the
	// function's parameters, evaluated in the module's namespace.
	Args []string `json:"args"`
}

// XFailMark is an expected-failure mark whose condition, if any, holds.
type XFailMark struct {
	Reason string `json:"reason"`
	// Strict: a pass fails the run (pytest's strict=True).
	Strict bool `json:"strict"`
	// Run false: the entry is not run at all (pytest's run=False).
	Run bool `json:"run"`
}

// ID names the entry in reports and for sharding: the pointer's text form
// ("test_cart:TestCart.test_total"), with a parametrized case's id in
// brackets as pytest writes it ("test_math:test_add[1-2]"), or the
// module's name for a module that could not be collected.
func (e *Entry) ID() string {
	if e.NodeID != "" {
		return e.NodeID
	}
	if e.CollectError != nil {
		return e.Pointer.Module
	}
	return e.Pointer.String() + e.caseSuffix()
}

// Name is the entry's qualified name within its module, with its case:
// "TestCart.test_total", "test_add[1-2]" (JUnit's testcase name).
func (e *Entry) Name() string {
	if e.NodeID != "" {
		return e.JUnitName
	}
	return e.Pointer.Qualname() + e.caseSuffix()
}

func (e *Entry) caseSuffix() string {
	if e.Case == nil {
		return ""
	}
	return "[" + e.Case.ID + "]"
}

// StackItem is the ExplicitCall that runs the entry. A method's self is a
// new instance of its class, set up by the kernel's test fixtures
// (kernel/python/engine_testing.py): for a unittest.TestCase built with
// the method's name, after setUpModule/setUpClass, then setUp; for another
// class built with no arguments, after setup_class, then setup_method.
// Their tear-downs run after the run (the engine's batch mode).
func (e *Entry) StackItem() protocol.StackItem {
	item := protocol.NewExplicitCall(e.Pointer)
	if e.Pointer.DefinedOnType != "" {
		item.ThisArgumentExpression = e.setUpExpression()
	}
	if e.Case != nil {
		item.PositionalArgumentsExpressions = slices.Clone(e.Case.Args)
	}
	return item
}

// setUpExpression builds a method entry's self (see StackItem).
func (e *Entry) setUpExpression() string {
	return "__import__('_ripple_testing').case(" + e.Pointer.DefinedOnType + ", '" + e.Pointer.Name + "')"
}

// Location is "path:line" (or the path alone when the line is unknown).
func (e *Entry) Location() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.Path, e.Line)
	}
	return e.Path
}

// sortEntries puts entries in report order: by path, then line, then
// function, then the order of a parametrized function's cases (pytest's).
// Every report lists results in this order, whatever the parallelism.
func sortEntries(es []Entry) {
	caseIndex := func(e *Entry) int {
		if e.Case == nil {
			return -1
		}
		return e.Case.Index
	}
	slices.SortStableFunc(es, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Pointer.String(), b.Pointer.String()),
			cmp.Compare(caseIndex(&a), caseIndex(&b)), cmp.Compare(a.ID(), b.ID()))
	})
}

// ParseEntry parses an --entry value, module:function or
// module:Class.method.
func ParseEntry(s string) (protocol.MethodPointer, error) {
	mp, err := protocol.ParseMethodPointer(s)
	if err != nil {
		return protocol.MethodPointer{}, fmt.Errorf("%w: --entry %q: want module:function or module:Class.method: %w", ErrUsage, s, err)
	}
	return mp, nil
}
