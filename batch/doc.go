// Package batch is ripple run: it runs a project's entries (functions, or
// tests found as pytest finds them) headless on the engine's kernel pool,
// and reports the results for CI: a console listing, JUnit XML and a JSON
// report. It has no execution path of its own: each entry is an execution
// context of an in-process engine client, pushed as an ExplicitCall and
// run by the same queue, jobs and kernels as ripple serve.
//
// Start here:
//
//	console := batch.NewConsole(os.Stdout, batch.ConsoleOptions{})
//	rep, err := batch.Run(ctx, batch.Options{Root: dir, Tests: true, Observer: console})
//	if err != nil && rep == nil { ... } // usage or project error
//	console.Finish(rep)
//	err = batch.WriteJUnit("junit.xml", rep)
//	ok := rep.Summary().Failing() == 0
//
// # Entries
//
// The entries are the --entry list (module:function or
// module:Class.method), plus, with Tests, the tests found by pytest's
// default rules: modules test_*.py and *_test.py; in them, functions whose
// name starts with "test", and classes whose name starts with "Test" and
// that have no __init__, with their methods whose name starts with "test";
// with neither, main:main. Discovery is static (Discover runs a small
// standard-library script, discover.py, with the project's interpreter;
// it parses modules with ast and imports nothing), so a test module with a
// syntax error is one failing entry, not a crash.
// @pytest.mark.parametrize (on the function, its class, or in a
// pytestmark; stacked marks multiply) makes one entry per case, named as
// pytest names it (test_add[1-2]; ids= and pytest.param(id=, marks=) are
// honoured), whose arguments are the source of the case's values,
// evaluated in the module's namespace; values that are not a literal list
// (a name, a call) cannot be expanded without importing the module, and
// the test is a skipped entry saying so. A test that needs other
// arguments (pytest fixtures), an async test and one marked skip
// (@pytest.mark.skip, @unittest.skip) are skipped entries.
// Conditional marks are decided at discovery, as pytest decides them when
// it collects: skipif (@pytest.mark.skipif, @unittest.skipIf, skipUnless)
// skips when its condition holds; xfail (@pytest.mark.xfail, with its
// reason, strict and run; @unittest.expectedFailure) applies when it has
// no condition or one that holds, and then a failing entry is xfailed and
// a passing one xpassed (failed when strict). A module's or class's
// pytestmark applies to its tests. At run time, a test that skips itself
// (TestCase.skipTest, pytest.skip, pytest.importorskip) is skipped with
// its reason and pytest.xfail makes it xfailed: the kernel ends the run at
// that statement (execute's stopAtSkip, kernel/PROTOCOL.md), as pytest
// does; after any other exception the independent statements still run,
// so their values show. A module that skips itself at import (a
// module-level pytest.importorskip, pytest.skip(allow_module_level=True),
// unittest.SkipTest) has its tests skipped, not failed with a compile
// error. A condition is evaluated
// with sys, os and platform in scope (pytest's names for string
// conditions); one that needs a name of the test module cannot be decided
// without importing it: the console says so and the mark is ignored (the
// test runs). unittest.TestCase subclasses are collected whatever their
// name, as pytest collects them, and a class's tests include those it
// inherits from classes of the module. A method's self is set up by the
// kernel (kernel/python/engine_testing.py) as unittest or pytest sets it
// up: for a TestCase, setUpModule and setUpClass when a kernel's tests
// enter the module and the class, then ClassName("test_name") and setUp;
// for another class, setup_class likewise, ClassName() and setup_method.
// After the run come tearDown and the cleanups (addCleanup), or
// teardown_method; tearDownClass, tearDownModule and teardown_class run
// when the kernel's next test is of another class or module (as
// unittest's suite runs them between groups of tests; the dispatcher keeps
// a kernel on a module while it can), or when the kernel exits. A SkipTest
// from a set-up skips the test; another exception there is an error "at
// set-up", one in a tear-down an error naming it. Not supported: pytest
// fixtures (a test that takes arguments no parametrize mark gives is a
// skipped entry; the autouse fixtures that apply to a test, of its
// module, class or a conftest.py, are listed in Entry.NotRun and named on
// the console), module-level xunit functions (setup_module,
// setup_function: listed likewise), a test's decorators other than marks
// (the engine runs the function's own body, so a wrapper such as
// mock.patch is not applied: listed likewise; a test whose parameters a
// decorator may supply is skipped saying so), IsolatedAsyncioTestCase (skipped),
// tests inherited from a class of another module, tests defined
// conditionally.
//
// Entries are in report order: by path, then line, then id. Every output
// (console lines, JUnit, JSON) lists results in that order, whatever the
// parallelism.
//
// # How entries run
//
// Run starts an engine with Batch set (a crash is reported, not retried)
// and ExecuteTimeout = Options.Timeout, announces every entry's module
// (engine.Compile; a kernel compiles a module before the first entry it
// runs from it, not ahead for all), then keeps each kernel busy: create a
// context, push the entry, wait for executionComplete or executionFailed,
// destroy the context, push the next entry, which lands on the slot that
// freed a place. The next entry is one of the module that slot just ran,
// else of a module no kernel runs, so that each kernel compiles few
// modules; the start order is therefore not the report order. Two entries
// are pushed per kernel (one with --fail-fast): the queue starts the
// second as soon as the first ends. An entry
//   - passes when its run completes and no statement raised;
//   - fails when a statement raised (a Panic whose trace starts at that
//     statement; a failing assert is one): the result names the
//     statement, its line and source, the message and the traceback from
//     the executionStatus diagnostic;
//   - is an error on compileError (its module or one it imports does not
//     load; the diagnostic says where) or failure (the function does not
//     exist, the class cannot be built);
//   - crashed when its kernel died (kernelDied: os._exit, a segfault; the
//     message has the exit status or signal); the kernel is replaced;
//   - timed out when it ran past the timeout (interrupted, and its kernel
//     restarted if it ignored the interrupt).
//
// What the entry printed (stdout, stderr, output of C code and child
// processes) is kept with its result, up to 1 MiB per stream (the middle
// of longer output is dropped, with a marker). What a test module prints
// when it is imported is no entry's output (pytest shows it only when
// collection fails), and its import time is no entry's time.
//
// # Sharding and merging
//
// Shard K/N keeps the entries whose id's FNV-1a hash is K-1 modulo N:
// stable when unrelated entries are added or removed. MergeJUnit and
// MergeJSON (ripple report merge) combine the shards' reports into the
// report an unsharded run would have written, apart from times.
//
// # The JSON report (version 1)
//
// WriteJSON writes one object; times are in seconds, lines are 1-based:
//
//	{
//	  "version": 1,                    // JSONVersion
//	  "project": "/abs/project/root",
//	  "python": {"path": "/usr/bin/python3.11", "version": "3.11.2"},
//	  "kernels": 4,                    // kernels the run used
//	  "timeout": 30,                   // per-entry timeout, 0 = none
//	  "shards": ["2/4"],               // shards in this report; [] = unsharded
//	  "startedAt": "2025-01-02T03:04:05Z",
//	  "duration": 12.5,                // wall time of the run
//	  "interrupted": false,            // stopped by Ctrl-C
//	  "stoppedEarly": false,           // stopped by --fail-fast
//	  "summary": {"total": 0, "passed": 0, "failed": 0, "errors": 0,
//	              "crashed": 0, "timeout": 0, "skipped": 0, "interrupted": 0,
//	              "xfailed": 0, "xpassed": 0},
//	  "entries": [{
//	    "id": "test_math:TestCalc.test_method",
//	    "module": "test_math", "class": "TestCalc", "function": "test_method",
//	    "case": "1-2",                        // only for a parametrized test: pytest's id
//	    "arguments": ["(1)", "(2)"],          // of the case (in the id: ...test_method[1-2])
//	                                          // and the source of its arguments
//	    "path": "test_math.py", "line": 36,   // the def; 0 when unknown
//	    "status": "failed",     // passed failed error crashed timeout skipped interrupted
//	                            // xfailed xpassed
//	    "duration": 0.002,
//	    "message": "AssertionError",          // why it did not pass; "" if it did
//	    "kind": "compileError",               // only when the run failed as a whole:
//	                                          // compileError failure kernelDied timeout interrupted
//	    "failures": [{                        // statements that raised, in source order
//	      "expressionId": "test_math:TestCalc.test_method/#1",
//	      "path": "test_math.py", "line": 38, "source": "assert x == 3",
//	      "message": "AssertionError",
//	      "traceback": [{"function": "TestCalc.test_method", "path": "test_math.py", "line": 38}]
//	    }],
//	    "diagnostic": {...},                  // optional: the client protocol's Diagnostic
//	                                          // (0-based location) of a compile error
//	    "stdout": "...", "stderr": "...",
//	    "values": [{                          // only with --show-values
//	      "expressionId": "test_math:TestCalc.test_method/x", "line": 37,
//	      "source": "x = add(1, 1)",
//	      "kind": "Value",                    // Value, Panic or Pending (not reached)
//	      "type": "builtins.int",
//	      "text": "2"                         // the preview, the exception, or the reason
//	    }]
//	  }]
//	}
//
// # The JUnit report
//
// WriteJUnit writes one testsuite per module and one testcase per entry (name = qualname, classname = module, time in
// seconds, file and line), failure for failed, error for error, crashed
// and timeout, skipped for skipped and interrupted (and, as pytest writes
// them, for xfailed, with type "pytest.xfail"; an xpassed testcase
// passes), system-out and system-err with the captured output.
package batch
