// Package batch is ripple run: it runs a project's tests (pytest, inside
// the kernels) or entries (functions, on the engine) headless, and reports
// the results for CI: a console listing, JUnit XML and a JSON report.
//
// Start here:
//
//	console := batch.NewConsole(os.Stdout, batch.ConsoleOptions{})
//	rep, err := batch.Run(ctx, batch.Options{Root: dir, Tests: true, PytestArgs: []string{"-k", "cart"}, Observer: console})
//	if err != nil && rep == nil { ... } // usage or project error
//	console.Finish(rep)
//	err = batch.WriteJUnit("junit.xml", rep)
//	ok := rep.Summary().Failing() == 0
//
// # Tests: pytest in the kernels
//
// With Options.Tests, pytest does everything it does for a test suite:
// configuration (ini files, addopts, testpaths, python_files, -p plugins
// and the installed ones), collection, fixtures of every scope with their
// conftest.py chains, marks, unittest and xunit support, assertion
// rewriting. Run (testpool.go) starts Kernels kernels with the project's
// interpreter; the kernel method "pytest" (kernel/python/ripple_kernel/pytest_plugin.py)
// drives one pytest session per kernel in steps, as a pytest-xdist worker
// does: each kernel builds its Config from Options.PytestArgs and collects,
// in parallel. With more than one kernel each collects (imports) only its
// share of the test modules, decided in the kernels before anything is
// imported, and the run merges the shares in pytest's order (split.go,
// which also says when every kernel collects the whole suite instead, and
// the node ids must then agree, else the run stops naming the first
// difference). The tests are then handed out in groups, one per module
// (xdist's loadfile: a module's tests, its classes' included, run on one
// kernel in pytest's order, so module state that tests share, and module-
// and class-scoped fixtures, are as under pytest: set up once), in
// collection order, each group to the first kernel that is free among
// those that collected it. With Options.Dist = DistLoadScope (ripple run
// --dist loadscope, xdist's mode of that name) a group is a class (its
// outermost one) or a module's functions: a module's classes may then run
// on different kernels, each of which sets up the module's fixtures. With
// DistLoad (--dist load, xdist's default mode) the groups are consecutive
// chunks of the collection that shrink towards its end (loadChunks), so a
// module's tests run on every kernel that is free. A
// kernel holds back the last test of a group until its next group (or the
// end) is known, so that it runs with pytest's nextitem and session
// fixtures live as long as the kernel's session.
//
// With more than one kernel, each local kernel's native thread pools
// (OpenMP, OpenBLAS, MKL, BLIS, vecLib, numexpr) get the machine's cores
// divided by the kernels, unless the user set their variables
// (threads.go): kernels x cores busy threads on the cores made
// scipy.linalg's suite 35% slower at 2 kernels.
//
// Each kernel's session shares the project directory and the machine with
// the others, where pytest has one session: a session- or package-scoped
// fixture that takes a fixed resource (a directory it refuses to reuse,
// a port) fails in every session but the first. Such a failure, while
// another session is open, is not reported: that kernel leaves the run
// and the tests it had not reported run on the others (testWorker.clash);
// in the last open session it is reported, as pytest reports a fixture
// that is broken.
//
// Each test's outcome is pytest's (its setup, call and teardown reports):
// passed, failed, skipped, xfailed, xpassed, error (its setup or teardown
// failed); the message is pytest's one-line reason (the assertion message
// with its values), Longrepr pytest's report of the failure, Stdout,
// Stderr and Output what pytest captured (for tests that did not pass).
// Collection reports that did not pass are entries too (a module that
// does not import is an error; one that skips itself, skipped); as pytest
// does, collection errors stop the run before any test (ErrCollection)
// unless --continue-on-collection-errors is given (with -x, as pytest's
// session ends: ErrStopped, status 1, when they reached it before the last
// module; collectionStop). ripple adds: a test
// that kills its kernel is crashed, one that runs past Options.Timeout is
// timeout (the kernel is interrupted, or killed if it ignores that); in
// both cases the kernel is replaced and the tests it still held run on the
// new one. A test that raises KeyboardInterrupt itself (or sends SIGINT to
// its own process) ends the run as it ends pytest's session: that test is
// interrupted, the others stop, the rest is not run, and the run returns
// ErrInterrupted naming it (exit status 2, as pytest's).
// FailFast passes --maxfail=1 to every kernel's pytest and stops
// the other kernels at the first failing result (running tests are
// interrupted, the rest skipped). pytest's own -x, --maxfail and --sw
// stop a kernel's session at a test; the other kernels then run only the
// groups before it in pytest's order, and the report leaves out what
// pytest would not have run (ErrStopped; with --sw, shouldstop, also
// ErrStoppedInterrupted: exit status 2); --sw runs on one kernel.
// Nothing collected is ErrNoTests (pytest's exit status 5).
//
// The kernels act as xdist workers toward plugins (config.workerinput,
// PYTEST_XDIST_WORKER): pytest's junitxml and cache plugins write nothing
// in them, and the run writes what a serial session would from the merged
// results: pytest's --junitxml file (junit_pytest.go, Report.PytestJUnitXML;
// what tests record for it, record_property, record_xml_attribute and
// record_testsuite_property, goes with their outcomes: a kernel holds a
// stand-in for pytest's LogXML) and the cache's lastfailed, nodeids and
// stepwise (pytest_cache.go).
// --collect-only runs nothing: the first kernel's pytest listing is the
// output (Report.PytestConsole). The console lays the run out as pytest's
// terminal reporter would (console_layout.go, console_summary.go) from
// each report rendered in its kernel by pytest's own code
// (kernel/python/ripple_kernel/pytest_console.py); -x and --maxfail count
// failures over all kernels (completer). A usage error pytest reports is a
// PytestUsageError (exit status 4), its internal error (a hook that
// raised) a PytestInternalError (exit status 3). Each kernel runs its tests as a
// subsequence of pytest's collection order: the queue keeps that order.
// While pytest's code runs, the kernel's own process state is out of its
// way (kernel/python/ripple_kernel/signals.py, PytestProcess). With the
// default kernels the suite is collected once: the first kernel collects
// it, the others start beside it and each joins, by a hand-over of the
// files of the tests it may run, only once those tests outweigh
// collecting them (kernelchoice.go says how many kernels a run uses,
// handover.go when a late kernel joins and what it is handed;
// testRun.late).
//
// With Options.Agents (ripple run --agents-listen), the kernels are the
// launcher's slots instead of children: Run waits for Options.Kernels
// agent kernels, then drives one worker per slot that has a kernel (every
// agent kernel connected by then, and the launcher's local kernels). The
// rules above hold across agents: each kernel collects (each agent needs
// the project in its root), a module's tests run on one kernel. A kernel
// that dies or times out is replaced by its agent and the worker takes the
// slot's next one. When an agent is lost, its worker puts back what its
// kernel held, the running test included (a test running when a second
// agent is lost is crashed), and ends; the other kernels run those tests
// (a kernel whose agent is lost while it collects leaves the run, and
// the others collect everything). So that they can, a kernel that finds
// the queue empty finishes its session and waits until a group is put
// back or no session is left open (testRun); with split collection
// (Options.SplitCollection, --split-collection) it
// takes a lost kernel's groups once no session holds that share, and
// collects that share first. Tests left with no kernel to run them are crashed, naming
// why: such a run is never green.
//
// Watch (ripple run --tests --watch) keeps the kernels between runs and
// their pytest sessions open after each, and during every run the kernels
// record which project functions each test reached, apart from those that
// ran at import or collection, in fixtures wider than a test, or under a
// cache (kernel/python/ripple_kernel/watchfn.py; a plain run records nothing).
// After the first run, each burst of saved changes takes one of three
// paths (watch.go has the rules): the hot path (hot.go) for library
// modules whose source changed only in function bodies none of which ran
// in those wider contexts: the kernels replace those functions' code in
// place and re-run, in their open sessions, only the tests that reached
// one of them; the module path for everything else and whenever the hot
// path is in doubt: the test modules that import a changed file, directly
// or through other project modules (the first kernel reports each test
// module's project imports, read with ast, conftest.py files of its
// directories included), in a new pytest session after the kernels forgot
// the project's modules (installed packages stay imported), which collects
// the whole suite and runs those modules; and every test when a
// configuration file changed.
//
// Without pytest in the interpreter, the same kernels run unittest's own
// loader (discover from the project root, pattern test*.py) and a class's
// tests as one unittest suite; a project whose test files are written
// for pytest (module-level test functions, Test classes that are not
// TestCases, import pytest) is ErrNoPytest, naming the interpreter and how
// to install pytest.
//
// Where a test run's code is: testpool.go (the kernels, and a run as its
// phases: collect, merge, plan, drive), collection.go (every kernel's
// collection settled), testplan.go (the suite and the entries),
// testgroup.go (scope groups and --dist load's chunks), testrun.go (the
// run's shared state and the scheduler: who owns what, which lock guards
// what), testworker.go and testworker_call.go (one kernel's driver, a
// request and what its failure leaves), drive.go (the results and what
// did not run), pytest_wire.go (the kernel method "pytest": requests and
// answers), handover.go and kernelchoice.go (the default kernels: one
// collection, and when a second kernel pays), split.go, hot.go, watch.go.
//
// # Entries
//
// Without Tests, the entries are the --entry list (module:function or
// module:Class.method), or main:main. Discover finds their lines without
// importing the project (a small standard-library script, entries.py, run
// with the project's interpreter). Each entry is an execution context of
// an in-process engine client, pushed as an ExplicitCall and run by the
// same queue, jobs and kernels as ripple serve.
//
// Results are in report order: for tests, pytest's collection order
// (collection reports first); for entries, by path, then line, then id.
// Every output (console lines, JUnit, JSON) lists results in that order,
// whatever the parallelism.
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
//	    "id": "test_math.py::TestCalc::test_method[1-2]", // pytest's node id; for an
//	                                          // --entry its pointer, "main:Shop.total"
//	    "module": "", "class": "", "function": "", // an --entry's pointer; "" for a test
//	    "path": "test_math.py", "line": 36,   // the def; 0 when unknown
//	    "status": "failed",     // passed failed error crashed timeout skipped interrupted
//	                            // xfailed xpassed
//	    "duration": 0.002,
//	    "message": "assert 2 == 3",           // why it did not pass; "" if it did
//	    "longrepr": "...",                    // a test's failure as pytest reports it
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
// WriteJUnit writes one testsuite per classname and one testcase per
// entry (for a test: pytest's classname, name, file and 0-based line, as
// its --junitxml writes them with junit_family=xunit1; for an entry: name =
// qualname, classname = module, the 1-based line), time in seconds. A
// test's children are those pytest's junitxml gives it (Result.JUnit: the
// failure's longrepr as its text, errors "failed on setup/teardown with",
// skipped of type "pytest.skip" or "pytest.xfail"; a failure followed by a
// teardown error is two testcases), each failure and error with a type;
// an entry's: failure for failed, error for error, crashed and timeout,
// skipped for skipped and interrupted; system-out and system-err with the
// captured output.
package batch
