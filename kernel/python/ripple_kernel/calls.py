"""Entering a stack item: the function a frame runs and its arguments
(PROTOCOL.md 7).

- An ExplicitCall at the bottom names ``module:qualname`` (a function, a
  static or class method, or a method with a ``this`` expression) and its
  arguments as expressions evaluated in the module's namespace; they are
  evaluated again only when what they read changes (arguments_key).
  ``module:__main__`` is the module's top level run as a script (7.1).
- A LocalCall names a statement of the frame below that made a direct
  call of a project function: the frame runs that function with the
  arguments that call was given.

Calls also answers the run's questions about callables: the method pointer
of a project function (method_pointer) and the callable a visualization
names (visualization_callable).
"""

from __future__ import annotations

import ast
import re
import types
from typing import Callable, Dict, List, Optional, Set, Tuple

from . import analysis, instrument, modules, values
from .api import KernelAPI, WireObject
from .effects import object_key
from .frame import Call, Entry, Frame, bind_arguments, class_cell
from .labelling import SCRIPT
from .plan import find_function
from .records import BROKEN, OK, ModuleRecord
from .runner import Failure

_POINTER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*):([A-Za-z_][A-Za-z0-9_.]*)\s*$")
# What an ExplicitCall's arguments were evaluated from (Frame.args_key).
ArgumentsKey = Tuple[object, ...]


class Calls:
    """Enters stack items into frames; see the module doc."""

    def __init__(self, kernel: KernelAPI, table: modules.ModuleTable, diagnostics: values.Diagnostics,
                 next_stamp: Callable[[], int]) -> None:
        self.kernel = kernel
        self.modules = table
        self.diagnostics = diagnostics
        self.next_stamp = next_stamp

    def module(self, name: str) -> ModuleRecord:
        """The record of an ok project module (loaded if needed), or a Failure."""
        rec = self.modules.ensure(name)
        if rec is None:
            raise Failure("failure", "module %s is not a module of the project" % name)
        if rec.state != OK:
            diag = rec.diagnostic
            message = "module %s failed to compile" % name
            if diag is not None:
                message += ": " + diag.get("message", "")
            raise Failure("compileError", message, diag)
        return rec

    def enter_explicit(self, frame: Frame, item: WireObject) -> Tuple[ModuleRecord, str]:
        """(record, qualname of the code to run) of the bottom frame."""
        module = item["module"]
        owner = item.get("definedOnType") or ""
        name = item["name"]
        qualname = owner + "." + name if owner else name
        if qualname == SCRIPT:
            return self._enter_script(frame, item), qualname
        rec = self.module(module)
        pointer = (module, qualname)
        if frame.pointer != pointer:
            frame.reset(pointer)
        key = self.arguments_key(rec, item, qualname)
        if frame.args_key != key:
            self._evaluate_arguments(frame, rec, item, qualname, key)
        # An inherited method runs the code of the class that defines it.
        return rec, frame.code_qualname or qualname

    def _enter_script(self, frame: Frame, item: WireObject) -> ModuleRecord:
        """The bottom frame module:__main__ (PROTOCOL.md 7.1): the module's
        top level run as a script, in a namespace of its own."""
        module = item["module"]
        if item.get("positionalArgumentsExpressions") or item.get("thisArgumentExpression") is not None:
            raise Failure("failure", "%s:__main__ runs the module as a script: it takes no arguments" % module)
        rec = self.modules.script(module)
        if rec is None:
            raise Failure("failure", "module %s is not a module of the project" % module)
        if rec.state == BROKEN:
            diag = rec.diagnostic
            message = "module %s failed to compile" % module
            if diag is not None:
                message += ": " + diag.get("message", "")
            raise Failure("compileError", message, diag)
        pointer = (module, SCRIPT)
        if frame.pointer != pointer:
            frame.reset(pointer)
        frame.script_globals = True
        return rec

    def arguments_key(self, rec: ModuleRecord, item: WireObject, qualname: str) -> ArgumentsKey:
        """What an ExplicitCall's arguments depend on: their expressions,
        the versions of the globals they read, and the function's signature."""
        sources = tuple(item.get("positionalArgumentsExpressions") or ())
        this = item.get("thisArgumentExpression")
        names: Set[str] = set()
        for src in sources + ((this,) if this is not None else ()):
            try:
                tree = ast.parse(src.strip(), "<argument>", "eval")
                names |= analysis.analyze(ast.Expr(value=tree.body)).uses
            except SyntaxError:
                pass
        head = qualname.split(".")[0]
        signature = None
        func = find_function(rec.source, qualname) if "." not in qualname and rec.source is not None else None
        if func is None:
            names.add(head)  # a method: its class (and the class cell super() needs) changes with it
        else:
            # A plain function: its arguments depend on its signature
            # (defaults, decorators), not on its body, so an edit of the
            # body keeps them and their stamp: a statement that reads a
            # parameter does not run again for an edit of another.
            signature = analysis.node_key(func.args) + "".join(analysis.node_key(d) for d in func.decorator_list)
            for expr in list(func.args.defaults) + [d for d in func.args.kw_defaults if d is not None] + list(func.decorator_list):
                names |= analysis.analyze(ast.Expr(value=expr)).uses
        versions = tuple((n, self.modules.global_version(rec.name, n)) for n in sorted(names))
        return (qualname, sources, this, versions, signature)

    def refresh_arguments(self, frame: Frame, rec: ModuleRecord) -> bool:
        """New argument objects for an ExplicitCall frame (a chain reached a parameter)."""
        item = getattr(frame, "item", None)
        if item is None or item.get("type") != "ExplicitCall" or frame.args_key is None:
            return False
        assert frame.pointer is not None  # set with args_key
        self._evaluate_arguments(frame, rec, item, frame.pointer[1], frame.args_key)
        return True

    def _evaluate_arguments(self, frame: Frame, rec: ModuleRecord, item: WireObject, qualname: str,
                            key: ArgumentsKey) -> None:
        module = rec.module
        assert module is not None  # an ok module
        pointer = "%s:%s" % (rec.name, qualname)
        owner, func, kind = _explicit_function(module, rec.name, qualname)
        this_src = item.get("thisArgumentExpression")
        if kind == "method" and this_src is None:
            raise Failure("failure", "method %s needs a thisArgumentExpression for its self" % pointer)
        sources = list(item.get("positionalArgumentsExpressions") or ())
        lead: List[object] = []
        globals_ = module.__dict__
        with self.kernel.user_code():
            if this_src is not None and kind != "function":
                this = _evaluate_argument(this_src, globals_, "the thisArgumentExpression", pointer, self.diagnostics)
                if kind == "classmethod" and not isinstance(this, type):
                    this = type(this)
                lead.append(this)
            elif kind == "classmethod":
                lead.append(owner)
            args = [
                _evaluate_argument(src, globals_, "argument %d" % (i + 1), pointer, self.diagnostics)
                for i, src in enumerate(sources)
            ]
        try:
            params = bind_arguments(func, lead + args, {})
        except TypeError as exc:
            raise Failure(
                "failure", "cannot call %s with %d argument(s): %s" % (pointer, len(args), exc)
            )
        frame.params = params
        frame.param_stamp = self.next_stamp()
        frame.args_key = key
        frame.args_fresh = True
        frame.func_class, frame.self_name = class_cell(func)
        own = getattr(func, "__qualname__", qualname)
        same_module = getattr(func, "__module__", None) == getattr(module, "__name__", rec.name)
        frame.code_qualname = own if own != qualname and same_module and "<locals>" not in own else None

    def enter_local(self, caller: Frame, frame: Frame, item: WireObject) -> Tuple[ModuleRecord, str]:
        """(record, qualname) of a LocalCall frame: the project function a
        statement of caller called, with that call's arguments."""
        expression_id = item["expressionId"]
        entry, (callee, args, kwargs) = _reached_call(caller, expression_id)
        func, lead = callee_function(callee)
        module = self.modules.module_of_object(func)
        script = None if module is not None else self.modules.is_script_code(func)
        if module is not None:
            rec = self.module(module)
        elif script is not None:
            rec = self.modules.records[script]
            module = script
        else:
            raise Failure("failure", "cannot enter %s: its callee is not a project function" % expression_id)
        qualname = func.__qualname__
        _refuse_shadowed(rec, func, qualname, expression_id)
        pointer = (module, qualname)
        if frame.pointer != pointer:
            frame.reset(pointer)
        # A function a script defined reads the script's namespace, not
        # the module's (which is not even imported).
        frame.script_globals = func.__globals__ if script is not None else None
        frame.func_class, frame.self_name = class_cell(func)
        if frame.param_stamp != entry.stamp:
            try:
                frame.params = bind_arguments(func, lead + list(args), kwargs)
            except TypeError as exc:
                raise Failure("failure", "cannot enter %s: %s" % (expression_id, exc))
            frame.param_stamp = entry.stamp
        return rec, qualname

    def method_pointer(self, callee: object) -> Optional[Dict[str, str]]:
        """MethodPointer of callee if it is a project function, else None."""
        try:
            func, _ = callee_function(callee)
        except Exception:
            return None
        if not isinstance(func, types.FunctionType):
            return None
        module = self.modules.module_of_object(func)
        qualname = getattr(func, "__qualname__", "")
        namespace = None
        if module is None:
            # A function a script defined: looked up in the script's namespace.
            module = self.modules.is_script_code(func)
            namespace = func.__globals__
        if module is None or "<locals>" in qualname:
            return None
        if namespace is None:
            rec = self.modules.records.get(module)
            namespace = rec.module.__dict__ if rec is not None and rec.module is not None else {}
        parts = qualname.split(".")
        obj = namespace.get(parts[0])
        for part in parts[1:]:
            if obj is None:
                return None
            obj = getattr(obj, part, None)
        if obj is None:
            return None
        if unwrap(getattr(obj, "__func__", obj)) is not func:
            return None
        owner, _, name = qualname.rpartition(".")
        return {"module": module, "definedOnType": owner, "name": name}

    def visualization_callable(self, expression: object, module_dict: Dict[str, object]) -> Callable[..., object]:
        """The callable a visualization expression names (raises on failure)."""
        if not isinstance(expression, str):
            raise TypeError("visualization expression must be a string")
        match = _POINTER.match(expression)
        obj: object
        if match:
            module_name, qualname = match.group(1), match.group(2)
            rec = self.modules.ensure(module_name)
            if rec is None or rec.state != OK:
                raise ImportError("visualization module %s is not a loadable project module" % module_name)
            obj = rec.module
            for part in qualname.split("."):
                obj = getattr(obj, part)
        else:
            obj = eval(instrument.compile_expression(expression, "<visualization>"), module_dict)
        if not callable(obj):
            raise TypeError("visualization expression %r is not callable" % expression)
        return obj


def _refuse_shadowed(rec: ModuleRecord, func: types.FunctionType, qualname: str, expression_id: str) -> None:
    """A frame runs the last def of its qualname (plan.find_function); a
    call of an earlier def of the same name (a script's `def g` called
    before a second `def g`: the namespace no longer holds it) cannot be
    entered: it would run the other body with these arguments."""
    src = rec.source
    if src is None or "." in qualname:
        return
    defs = [n for n in src.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == qualname]
    if len(defs) > 1 and func.__globals__.get(qualname) is not func:
        raise Failure("failure", "cannot enter %s: it calls an earlier definition of %s than the one at line %d, "
                      "which its frame runs" % (expression_id, qualname, defs[-1].lineno))


def _reached_call(caller: Frame, expression_id: str) -> Tuple[Entry, Call]:
    """The cache entry of caller's statement expression_id, which made a
    direct call in the last run, and that call (else a Failure saying why not)."""
    plan = caller.plan
    if plan is None or expression_id not in plan.by_id:
        where = "%s:%s" % (plan.module, plan.qualname) if plan is not None else "the caller"
        raise Failure("failure", "expression %s is not a statement of %s" % (expression_id, where))
    panic = None
    for index, p in caller.panicked.items():
        if plan.stmts[index].id == expression_id:
            panic = p
    if panic is not None:
        raise Failure("failure", "cannot enter %s: it raised %s" % (expression_id, panic[0]))
    if expression_id not in caller.reached:
        raise Failure("failure", "cannot enter %s: it was not reached in this run" % expression_id)
    entry = caller.cache.get(expression_id)
    if entry is None or entry.call is None:
        raise Failure("failure", "cannot enter %s: it is not a direct call of a project function" % expression_id)
    return entry, entry.call


def _explicit_function(module: types.ModuleType, name: str, qualname: str) -> Tuple[object, types.FunctionType, str]:
    """(owner, function, kind) an ExplicitCall names: kind is "function",
    "method" or "classmethod"; owner the class (the module for a function)."""
    pointer = "%s:%s" % (name, qualname)
    parts = qualname.split(".")
    owner: object = module
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            raise Failure("failure", "function %s not found: %s has no %s" % (pointer, name, ".".join(parts[:-1])))
    if len(parts) > 1:
        import inspect  # not at module level: see unwrap

        try:
            raw = inspect.getattr_static(owner, parts[-1])
        except AttributeError:
            raise Failure("failure", "function %s not found in module %s" % (pointer, name))
    else:
        raw = module.__dict__.get(parts[-1])
        if raw is None:
            raise Failure("failure", "function %s not found in module %s" % (pointer, name))
    kind = "function"
    func: object
    if isinstance(raw, staticmethod):
        func = raw.__func__
    elif isinstance(raw, classmethod):
        func = raw.__func__
        kind = "classmethod"
    else:
        func = raw
        if len(parts) > 1:
            kind = "method"
    func = unwrap(func)
    if not isinstance(func, types.FunctionType):
        raise Failure("failure", "%s is not a function (it is a %s)" % (pointer, type(func).__name__))
    return owner, func, kind


def unwrap(func: object) -> object:
    """inspect.unwrap without importing inspect, which costs every kernel
    start ~5 ms for the few calls that need it (methods, signatures)."""
    original, seen = func, {object_key(func)}
    try:
        while hasattr(func, "__wrapped__"):
            func = getattr(func, "__wrapped__")
            if object_key(func) in seen or len(seen) > 1000:
                return original  # a cycle: inspect.unwrap raises
            seen.add(object_key(func))
    except Exception:
        return original
    return func


def callee_function(callee: object) -> Tuple[types.FunctionType, List[object]]:
    """(function, leading args) of a captured callee (bound methods bind self).
    The function is whatever the callee unwraps to; callers check its type."""
    if isinstance(callee, types.MethodType):
        return unwrap(callee.__func__), [callee.__self__]  # type: ignore[return-value]  # see the doc
    return unwrap(callee), []  # type: ignore[return-value]  # see the doc


def _evaluate_argument(src: str, globals_: Dict[str, object], what: str, pointer: str,
                       diagnostics: values.Diagnostics) -> object:
    try:
        code = instrument.compile_expression(src, "<argument>")
        return eval(code, globals_)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        message = "%s of %s (%r) raised %s" % (what, pointer, src, values.exception_message(exc))
        # The traceback shows where, in the code the expression called.
        raise Failure("failure", message, diagnostics.for_exception(exc, message=message))
