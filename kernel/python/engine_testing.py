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
- a unittest.TestCase: setUpModule and setUpClass when the kernel's tests
  enter the module and the class (their failure, SkipTest included, is
  every later test's there), then Class('test_name') and setUp; after the
  run tearDown (only if setUp succeeded) and the cleanups (addCleanup, last
  in first out, also when setUp failed). tearDownClass and tearDownModule
  run when the kernel's next test is of another class or module, as
  unittest's suite runs them between groups of tests, or when the kernel
  exits.
- any other class (pytest's xunit style): setup_class likewise, Class(),
  setup_method(method); after the run teardown_method(method);
  teardown_class when the tests move on or the kernel exits.

State: per class and module, whether its set-up ran in this kernel and how
it failed (the kernel's main thread only).
"""

import sys

ENGINE = None  # the Engine (defer_teardown, kernel.at_exit), set by engine.py

_set_up = {}  # scope key -> None (set up) or the exception its set-up raised
_teardowns = {}  # scope key -> its tear-down, while it is set up
_current = {"module": None, "class": None}  # scope keys of the tests running here
_exit_hooked = []  # [True] once the kernel's exit runs _finish_all


def _defer(stage, fn):
    ENGINE.defer_teardown(stage, fn)


def case(cls, name):
    """The instance test method `name` of `cls` runs on, set up."""
    import unittest

    module_key = "module " + cls.__module__
    class_key = "class %s.%s" % (cls.__module__, cls.__qualname__)
    _enter(module_key, class_key)
    if isinstance(cls, type) and issubclass(cls, unittest.TestCase):
        return _unittest_case(cls, name, module_key, class_key)
    return _xunit_case(cls, name, class_key)


def _enter(module_key, class_key):
    """Tear down the class and the module of the previous tests when these
    are another's, as unittest's suite does between groups of tests: a
    kernel runs a module's tests one after the other (the batch keeps it on
    one module while it can), so a class or module set up again later is
    rare; what is still set up when the kernel exits is torn down then."""
    for scope, key in (("class", class_key), ("module", module_key)):
        if _current[scope] is not None and _current[scope] != key:
            _finish(_current[scope])
        _current[scope] = key


def _finish(key):
    """Run the tear-down of a scope; a failure is written to stderr (the
    output of the test that made the switch): it belongs to no test."""
    _set_up.pop(key, None)
    teardown = _teardowns.pop(key, None)
    if teardown is None:
        return
    try:
        teardown()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        import traceback

        sys.stderr.write("ripple run: the tear-down of %s raised:\n%s" % (key, "".join(traceback.format_exception(exc))))


def _finish_all():
    for scope in ("class", "module"):
        if _current[scope] is not None:
            _finish(_current[scope])
            _current[scope] = None


def _once(key, setup, teardown):
    """Run setup the first time key is seen since its last tear-down (and
    keep teardown for when the tests move on, or the kernel exits); re-raise
    its failure every time after."""
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
            _teardowns[key] = teardown
            at_exit = getattr(ENGINE.kernel, "at_exit", None)
            if not _exit_hooked and at_exit is not None:
                _exit_hooked.append(True)
                at_exit(_finish_all)
    failed = _set_up[key]
    if failed is not None:
        raise failed


def _unittest_case(cls, name, module_key, class_key):
    import unittest

    if issubclass(cls, getattr(unittest, "IsolatedAsyncioTestCase", ())):
        raise unittest.SkipTest("IsolatedAsyncioTestCase needs an event loop: not supported by ripple run")
    module = sys.modules.get(cls.__module__)
    setup_module = getattr(module, "setUpModule", None)
    teardown_module = getattr(module, "tearDownModule", None)
    if setup_module is not None or teardown_module is not None:
        _once(module_key, setup_module or (lambda: None), teardown_module)
    _once(class_key, cls.setUpClass, cls.tearDownClass)
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


def _xunit_case(cls, name, class_key):
    setup_class = getattr(cls, "setup_class", None)
    teardown_class = getattr(cls, "teardown_class", None)
    if setup_class is not None or teardown_class is not None:
        _once(class_key, setup_class or (lambda: None), teardown_class)
    inst = cls()
    method = getattr(inst, name, None)
    setup = getattr(inst, "setup_method", None)
    if setup is not None:
        setup(method)
    teardown = getattr(inst, "teardown_method", None)
    if teardown is not None:
        _defer("teardown_method", lambda: teardown(method))
    return inst
