"""Test fixtures for batch runs (`ripple run`): the instance a test method
runs on, its set-up, and the tear-down that execute's `finalize` runs after
the run (kernel/PROTOCOL.md).

engine.py registers this file as the module ``_ripple_testing`` (loaded
the first time a batch stack item uses it); the batch package's stack
items build a test method's self with ``__import__('_ripple_testing').case(
Class, 'test_name')``, evaluated like any thisArgumentExpression (user
code, in the test module's namespace). The tear-downs it registers go to
the engine (Engine.defer_teardown), which runs them after the run.

What runs, as unittest and pytest run it:
- a unittest.TestCase: setUpModule and setUpClass once per kernel (their
  failure, SkipTest included, is every later test's), then
  Class('test_name') and setUp; after the run tearDown (only if setUp
  succeeded) and the cleanups (addCleanup, last in first out, also when
  setUp failed). tearDownClass and tearDownModule run when the kernel
  exits: a kernel runs the tests of a class one after the other but does
  not know which one is the last.
- any other class (pytest's xunit style): setup_class once per kernel,
  Class(), setup_method(method); after the run teardown_method(method);
  teardown_class when the kernel exits.

State: per class and module, whether its set-up ran in this kernel and how
it failed (the kernel's main thread only).
"""

import sys

ENGINE = None  # the Engine (defer_teardown, kernel.at_exit), set by engine.py

_set_up = {}  # class or module name -> None (done) or the exception its set-up raised


def _defer(stage, fn):
    ENGINE.defer_teardown(stage, fn)


def _at_exit(fn):
    at_exit = getattr(ENGINE.kernel, "at_exit", None)
    if at_exit is not None:
        at_exit(fn)


def case(cls, name):
    """The instance test method `name` of `cls` runs on, set up."""
    import unittest

    if isinstance(cls, type) and issubclass(cls, unittest.TestCase):
        return _unittest_case(cls, name)
    return _xunit_case(cls, name)


def _once(key, setup, teardown):
    """Run setup the first time key is seen in this kernel (teardown at
    exit if it succeeded); re-raise its failure every time after."""
    if key not in _set_up:
        try:
            setup()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            _set_up[key] = exc
            raise
        _set_up[key] = None
        if teardown is not None:
            _at_exit(teardown)
    failed = _set_up[key]
    if failed is not None:
        raise failed


def _unittest_case(cls, name):
    import unittest

    if issubclass(cls, getattr(unittest, "IsolatedAsyncioTestCase", ())):
        raise unittest.SkipTest("IsolatedAsyncioTestCase needs an event loop: not supported by ripple run")
    module = sys.modules.get(cls.__module__)
    setup_module = getattr(module, "setUpModule", None)
    teardown_module = getattr(module, "tearDownModule", None)
    if setup_module is not None or teardown_module is not None:
        _once("module " + cls.__module__, setup_module or (lambda: None), teardown_module)
    _once("class %s.%s" % (cls.__module__, cls.__qualname__), cls.setUpClass, cls.tearDownClass)
    inst = cls(name)
    try:
        inst.setUp()
    except BaseException:
        _run_cleanups(inst)
        raise
    _defer("cleanup", lambda: _run_cleanups(inst))
    _defer("tearDown", inst.tearDown)
    return inst


def _run_cleanups(inst):
    """TestCase.doCleanups without a result to report to: every cleanup
    runs, the first exception is raised after the last."""
    first = None
    cleanups = getattr(inst, "_cleanups", [])
    while cleanups:
        fn, args, kwargs = cleanups.pop()
        try:
            fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            if first is None:
                first = exc
    if first is not None:
        raise first


def _xunit_case(cls, name):
    setup_class = getattr(cls, "setup_class", None)
    teardown_class = getattr(cls, "teardown_class", None)
    if setup_class is not None or teardown_class is not None:
        _once("class %s.%s" % (cls.__module__, cls.__qualname__), setup_class or (lambda: None), teardown_class)
    inst = cls()
    method = getattr(inst, name, None)
    setup = getattr(inst, "setup_method", None)
    if setup is not None:
        setup(method)
    teardown = getattr(inst, "teardown_method", None)
    if teardown is not None:
        _defer("teardown_method", lambda: teardown(method))
    return inst
