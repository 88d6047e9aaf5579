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
	// Pointer names an --entry function; DefinedOnType is set for a
	// method, which runs on a fresh instance of its class. Unset for a
	// test.
	Pointer protocol.MethodPointer
	// Path is the module's file, relative to the project root, with
	// forward slashes.
	Path string
	// Line is the 1-based line of the function's def, 0 when unknown (a
	// function bound by an assignment).
	Line int

	// NodeID is pytest's node id of a test run by pytest in the kernels
	// (ripple run --tests): the entry's id in every report.
	NodeID string
	// JUnitClass and JUnitName are the testcase's classname and name as
	// pytest's --junitxml writes them for NodeID.
	JUnitClass, JUnitName string
	// Scope is the group the entry runs in: its module (pytest-xdist's
	// loadfile): a module's tests run on one kernel, in collection order,
	// so module state, module and class fixtures are as under pytest.
	Scope string
}

// ID names the entry in reports and for sharding: a test's pytest node
// id, or an entry's pointer in text form ("main:Shop.total").
func (e *Entry) ID() string {
	if e.NodeID != "" {
		return e.NodeID
	}
	return e.Pointer.String()
}

// Name is the entry's JUnit testcase name: pytest's for a test, the
// qualified name within its module for an entry ("Shop.total").
func (e *Entry) Name() string {
	if e.NodeID != "" {
		return e.JUnitName
	}
	return e.Pointer.Qualname()
}

// StackItem is the ExplicitCall that runs the entry. A method's self is a
// new instance of its class built with no arguments (tests, with their
// fixtures and set-ups, are pytest's: ripple run --tests).
func (e *Entry) StackItem() protocol.StackItem {
	item := protocol.NewExplicitCall(e.Pointer)
	if e.Pointer.DefinedOnType != "" {
		item.ThisArgumentExpression = e.setUpExpression()
	}
	return item
}

// setUpExpression builds a method entry's self (see StackItem).
func (e *Entry) setUpExpression() string {
	return e.Pointer.DefinedOnType + "()"
}

// Location is "path:line" (or the path alone when the line is unknown).
func (e *Entry) Location() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.Path, e.Line)
	}
	return e.Path
}

// sortEntries puts entries in report order: by path, then line, then id.
func sortEntries(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.ID(), b.ID()))
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
