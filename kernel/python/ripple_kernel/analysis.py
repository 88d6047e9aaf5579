"""Static analysis of the statements of a function body (PROTOCOL.md 5.2, 5.3).

For each statement: the names it uses (reads anywhere in it, free names of
nested lambdas, comprehensions, functions and classes included), the names it
defines (bound outside nested scopes: assignment and for targets, with-as,
imports, def/class, walrus, except-as, del), the names it mutates (5.3: a
method call on a name as a statement's or an assignment value's base, an
assignment or del of an attribute or item of a name, an augmented
assignment; anywhere in the statement outside nested functions). Mutated
names are also defined.

Two more facts the caching needs: ``lazy`` is the set of free names read by
code that runs later (a lambda, a nested def, a generator expression): a
statement that later calls that code reads those names at call time; and
``compound`` marks statements whose bindings are conditional (if/for/while/
try/with): such a statement may leave a name's earlier value in place, so it
also depends on that earlier value.

Results are cached by the statement's source text (they do not depend on its
position), so re-analysing a 1,000-statement function after one edit costs one
statement. Compiling statements so that they report their values is
instrument.py's.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

from .labelling import number_labels

# An import of a statement: (level, module or "", ((name, asname), ...),
# is_from); a star import has the name "*".
Import = Tuple[int, str, Tuple[Tuple[str, Optional[str]], ...], bool]
# A name a statement may mutate through code it calls: (name, (reason,
# detail)); see StmtInfo.maybe.
Maybe = Tuple[str, Tuple[str, Optional[str]]]
_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

_COMPOUND = tuple(
    getattr(ast, name)
    for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar", "Match")
    if hasattr(ast, name)
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_CACHE_LIMIT = 100000


class StmtInfo:
    """What one statement reads, binds and mutates. Position independent."""

    __slots__ = ("uses", "binds", "defines", "mutates", "lazy", "compound", "returns", "yields", "label", "key", "imports",
                 "maybe", "later_writes", "later_globals", "receivers")

    def __init__(self, uses: FrozenSet[str], binds: FrozenSet[str], defines: FrozenSet[str], mutates: FrozenSet[str],
                 lazy: FrozenSet[str], compound: bool, returns: bool, yields: bool, label: Optional[str], key: str,
                 imports: Tuple[Import, ...] = (), maybe: FrozenSet[Maybe] = frozenset(),
                 later_writes: FrozenSet[str] = frozenset(), later_globals: FrozenSet[str] = frozenset(),
                 receivers: FrozenSet[str] = frozenset()) -> None:
        self.uses = uses
        self.binds = binds  # names actually bound (assigned, imported, deleted...)
        self.defines = defines  # binds + mutates
        self.mutates = mutates
        self.lazy = lazy
        self.compound = compound
        self.returns = returns
        self.yields = yields
        self.label = label  # definition label base ("x", "a,b", "return") or None for "#k"
        self.key = key  # normalised source: node_key, no positions
        # Every import in the statement, nested functions included:
        # (level, module, [(name, asname)], is_from); star imports have name "*".
        self.imports = imports
        # Names the statement may mutate through code it calls (5.3):
        # (name, reason) pairs, reason one of MAYBE_ARG (an argument of
        # a call; the callee's name as its second item, or None), MAYBE_METHOD
        # (the receiver of a method call; the method's name), MAYBE_CALLEE
        # (a called name: a closure's or generator's state), MAYBE_ITER
        # (iterated or unpacked: an iterator is consumed), MAYBE_SUBSCRIPT
        # (subscripted: a __getitem__ in Python is a call). The run decides
        # from the values at hand whether one can have an effect (Runner).
        self.maybe = maybe
        # Names nested functions of the statement rebind in the frame when
        # they are called later (`nonlocal n`): a statement calling one
        # binds them.
        self.later_writes = later_writes
        # Module globals nested functions of the statement rebind when they
        # are called later (`global x`): in a script the module's globals
        # are the frame's names, so a statement calling one binds them.
        self.later_globals = later_globals
        # Names in mutates only as the receiver of a method call the
        # statement makes (`s = json.dumps(x)`): whether the call mutates
        # the object depends on the object (a module's function does not
        # mutate the module: rerun.RerunPlanner).
        self.receivers = receivers


MAYBE_ARG, MAYBE_METHOD, MAYBE_CALLEE, MAYBE_ITER = "arg", "method", "callee", "iter"
# Subscripted (`c[0]`): a __getitem__ written in Python is a call, and may
# mutate its object (a cache, a counter); objects.inert decides.
MAYBE_SUBSCRIPT = "subscript"


class Analyzer:
    """Caches StmtInfo by source text.

    Not thread-safe: the kernel runs one request at a time.
    """

    def __init__(self) -> None:
        self._infos: Dict[str, StmtInfo] = {}  # segment text -> StmtInfo

    def info(self, text: str, node: ast.AST) -> StmtInfo:
        info = self._infos.get(text)
        if info is None:
            if len(self._infos) > _CACHE_LIMIT:
                self._infos.clear()
            info = analyze(node)
            self._infos[text] = info
        return info


def analyze(node: ast.AST) -> StmtInfo:
    """StmtInfo of one statement node."""
    scan = _Scan()
    scan.stmt(node)
    top = scan.top
    uses = set(top.reads)
    lazy: Set[str] = set()
    for child in top.children:
        uses |= child.free
        lazy |= child.free if child.lazy else child.lazy_free
    mutates = frozenset(top.mutates)
    defines = frozenset(top.binds | top.mutates)
    return StmtInfo(
        uses=frozenset(uses),
        binds=frozenset(top.binds),
        defines=defines,
        mutates=mutates,
        lazy=frozenset(lazy),
        compound=isinstance(node, _COMPOUND),
        returns=scan.returns,
        yields=scan.yields,
        label=label_base(node),
        key=node_key(node),
        imports=tuple(scan.imports),
        maybe=frozenset(m for m in scan.maybe if m[0] in uses),
        later_writes=frozenset(scan.later_writes),
        later_globals=frozenset(scan.later_globals),
        receivers=frozenset(scan.receivers - scan.stored) & mutates,
    )


def node_key(node: object) -> str:
    """The node's structure without positions, as a string: equal for two
    nodes exactly when ast.dump's is (types, fields in order, constants'
    reprs, which delimit themselves), at half its cost; keys are taken of
    every statement at every compile and run."""
    out: List[str] = []
    append = out.append
    AST = ast.AST

    def walk(x: object) -> None:
        if isinstance(x, AST):
            append(type(x).__name__)
            append("(")
            for name in x._fields:
                walk(getattr(x, name, None))
                append(",")
            append(")")
        elif isinstance(x, list):
            append("[")
            for y in x:
                walk(y)
                append(",")
            append("]")
        else:
            append(repr(x))

    walk(node)
    return "".join(out)


def label_base(node: ast.AST) -> Optional[str]:
    """The definition label of a statement (5.2), or None for a "#k" statement."""
    if isinstance(node, ast.Assign):
        names: List[str] = []
        for target in node.targets:
            if not _target_names(target, names):
                return None
        return ",".join(names) if names else None
    if isinstance(node, ast.AnnAssign):
        if node.value is not None and isinstance(node.target, ast.Name):
            return node.target.id
        return None
    if isinstance(node, ast.AugAssign):
        return node.target.id if isinstance(node.target, ast.Name) else None
    if isinstance(node, ast.Return):
        return "return"
    return None


def _target_names(target: ast.expr, out: List[str]) -> bool:
    if isinstance(target, ast.Name):
        out.append(target.id)
        return True
    if isinstance(target, ast.Starred):
        return _target_names(target.value, out)
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_target_names(elt, out) for elt in target.elts)
    return False


def labels(infos: Iterable[StmtInfo]) -> List[str]:
    """The 5.2 labels of a body's statements, given their StmtInfos in
    order (numbered by labelling.py, the one numbering of expression ids)."""
    return number_labels(info.label for info in infos)


def parameter_names(args: ast.arguments) -> List[str]:
    """Parameter names of an ast.arguments, in signature order."""
    names = [a.arg for a in getattr(args, "posonlyargs", [])]
    names += [a.arg for a in args.args]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return names


def root_name(node: ast.AST) -> Optional[str]:
    """The Name at the base of an attribute/item/call chain, or None."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


class _Scope:
    __slots__ = ("kind", "reads", "binds", "declared", "mutates", "children", "free", "lazy_free", "lazy")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "stmt", "function", "class", "comp", "genexp"
        self.reads: Set[str] = set()
        self.binds: Set[str] = set()
        self.declared: Set[str] = set()  # global/nonlocal names: not local here
        self.mutates: Set[str] = set()
        self.children: List[_Scope] = []
        self.free: Set[str] = set()
        self.lazy_free: Set[str] = set()
        self.lazy = kind in ("function", "genexp")

    def close(self) -> None:
        """Compute free and lazy_free from own reads and children."""
        local = self.binds - self.declared
        free: Set[str] = set()
        lazy_free: Set[str] = set()
        for child in self.children:
            free |= child.free
            lazy_free |= child.free if child.lazy else child.lazy_free
        if self.kind == "class":
            # Methods do not see class-body names, so only the body's own
            # reads are resolved against them.
            free |= self.reads - local
        else:
            free = (free | self.reads) - local
            lazy_free -= local
        self.free = free | self.declared
        self.lazy_free = lazy_free


class _Scan:
    """One pass over a statement, tracking scopes."""

    def __init__(self) -> None:
        self.top = _Scope("stmt")
        self.scope = self.top
        self.stack = [self.top]
        self.returns = False
        self.yields = False
        self.imports: List[Import] = []
        self.maybe: Set[Maybe] = set()
        self.later_writes: Set[str] = set()
        self.later_globals: Set[str] = set()
        self.receivers: Set[str] = set()  # mutated as a method call's receiver (_value_base_mutation)
        self.stored: Set[str] = set()  # mutated through a store (an attribute, an item, augmented)

    def _runs_now(self) -> bool:
        """Whether code at this point runs while the statement runs (not in
        a nested function or lambda, which run when called)."""
        for scope in self.stack:
            if scope.kind == "function":
                return False
        return True

    def _maybe(self, node: ast.AST, reason: Tuple[str, Optional[str]]) -> None:
        """Every name read in node may be mutated (reason: see StmtInfo.maybe)."""
        if not self._runs_now():
            return
        if isinstance(node, ast.Name):
            self.maybe.add((node.id, reason))
            return
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                self.maybe.add((child.id, reason))

    # -- scopes -------------------------------------------------------------

    def _push(self, kind: str) -> _Scope:
        scope = _Scope(kind)
        self.scope.children.append(scope)
        parent = self.scope
        self.scope = scope
        self.stack.append(scope)
        return parent

    def _pop(self, parent: _Scope) -> None:
        scope = self.scope
        scope.close()
        # Mutations done while the statement runs (comprehension bodies) are
        # the statement's; those in functions happen later, when called.
        if scope.kind in ("comp", "class"):
            parent.mutates |= scope.mutates - scope.binds
        self.stack.pop()
        self.scope = parent

    def _bind(self, name: str) -> None:
        self.scope.binds.add(name)

    def _binding_scope_for_walrus(self) -> _Scope:
        for scope in reversed(self.stack):
            if scope.kind != "comp":
                return scope
        return self.top

    def _mutate(self, node: ast.AST, receiver: bool = False) -> None:
        name = root_name(node)
        if name is not None:
            self.scope.mutates.add(name)
            if self.scope is self.top:
                (self.receivers if receiver else self.stored).add(name)

    # -- statements ---------------------------------------------------------

    def stmt(self, node: ast.AST) -> None:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic(node)

    def stmts(self, nodes: Iterable[ast.AST]) -> None:
        for node in nodes:
            self.stmt(node)

    def _value_base_mutation(self, value: ast.expr) -> None:
        if self.scope is self.top and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            self._mutate(value.func.value, receiver=True)

    def s_Expr(self, node: ast.Expr) -> None:
        self._value_base_mutation(node.value)
        self.expr(node.value)

    def s_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            self._maybe(node.value, (MAYBE_ITER, None))  # unpacking consumes an iterator
        self._value_base_mutation(node.value)
        self.expr(node.value)
        for target in node.targets:
            self.target(target)

    def s_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._value_base_mutation(node.value)
            self.expr(node.value)
        self.expr(node.annotation)
        if node.value is not None or not isinstance(node.target, ast.Name):
            self.target(node.target)

    def s_AugAssign(self, node: ast.AugAssign) -> None:
        self._value_base_mutation(node.value)
        self.expr(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            self.scope.reads.add(target.id)
            self._bind(target.id)
            self.scope.mutates.add(target.id)
            self.stored.add(target.id)
        else:
            self.expr(target.value)
            if isinstance(target, ast.Subscript):
                self.expr(target.slice)
            self._mutate(target)

    def s_Return(self, node: ast.Return) -> None:
        if self.scope is self.top:
            self.returns = True
        if node.value is not None:
            self._value_base_mutation(node.value)
            self.expr(node.value)

    def s_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            # `del x` reads x: it fails when x is unbound, so it depends on
            # the statement that bound it.
            for child in ast.walk(target):
                if isinstance(child, ast.Name):
                    self.scope.reads.add(child.id)
            self.target(target)

    def s_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._bind(alias.asname or alias.name.split(".")[0])
            self.imports.append((0, alias.name, ((alias.name, alias.asname),), False))

    def s_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self._bind(alias.asname or alias.name)
        names = tuple((a.name, a.asname) for a in node.names)
        self.imports.append((node.level or 0, node.module or "", names, True))

    def s_Global(self, node: ast.Global) -> None:
        self.scope.declared.update(node.names)
        if not self._runs_now():
            self.later_globals.update(node.names)

    def s_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.declared.update(node.names)
        self.later_writes.update(node.names)

    def s_FunctionDef(self, node: _Function) -> None:
        for dec in node.decorator_list:
            self.expr(dec)
        self._arguments_outer(node.args)
        if node.returns is not None:
            self.expr(node.returns)
        self._bind(node.name)
        parent = self._push("function")
        self._arguments_inner(node.args)
        self.stmts(node.body)
        self._pop(parent)

    s_AsyncFunctionDef = s_FunctionDef

    def s_ClassDef(self, node: ast.ClassDef) -> None:
        for dec in node.decorator_list:
            self.expr(dec)
        for base in node.bases:
            self.expr(base)
        for kw in node.keywords:
            self.expr(kw.value)
        self._bind(node.name)
        parent = self._push("class")
        self.stmts(node.body)
        self._pop(parent)

    def s_For(self, node: Union[ast.For, ast.AsyncFor]) -> None:
        self._maybe(node.iter, (MAYBE_ITER, None))
        self.expr(node.iter)
        self.target(node.target)
        self.stmts(node.body)
        self.stmts(node.orelse)

    s_AsyncFor = s_For

    def s_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.expr(node.type)
        if node.name:
            self._bind(node.name)
        self.stmts(node.body)

    def generic(self, node: ast.AST) -> None:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    self._any(item)
            elif isinstance(value, ast.AST):
                self._any(value)

    def _any(self, node: object) -> None:
        if isinstance(node, ast.stmt) or isinstance(node, ast.excepthandler):
            self.stmt(node)
        elif isinstance(node, ast.expr):
            self.expr(node)
        elif isinstance(node, ast.withitem):
            self.expr(node.context_expr)
            if node.optional_vars is not None:
                self.target(node.optional_vars)
        elif isinstance(node, ast.AST):
            kind = type(node).__name__
            if kind in ("MatchAs", "MatchStar") and getattr(node, "name", None):
                self._bind(getattr(node, "name"))
            elif kind == "MatchMapping" and getattr(node, "rest", None):
                self._bind(getattr(node, "rest"))
            self.generic(node)

    # -- expressions ---------------------------------------------------------

    def target(self, node: ast.expr) -> None:
        """A binding target (Store or Del context)."""
        if isinstance(node, ast.Name):
            self._bind(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for elt in node.elts:
                self.target(elt)
        elif isinstance(node, ast.Starred):
            self.target(node.value)
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            self.expr(node.value)
            if isinstance(node, ast.Subscript):
                self.expr(node.slice)
            self._mutate(node)
        else:
            self.expr(node)

    def expr(self, node: Optional[ast.expr]) -> None:
        if node is None:
            return
        kind = type(node)
        if kind is ast.Name:
            # (kind is ast.Name: a Name; `type() is` over isinstance on this hot path)
            if isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                self.scope.reads.add(node.id)  # type: ignore[attr-defined]
            else:
                self.target(node)
            return
        if kind is ast.Constant:
            return
        method = getattr(self, "e_" + kind.__name__, None)
        if method is not None:
            method(node)
            return
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            self.target(node)
            return
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.expr):
                        self.expr(item)
                    elif isinstance(item, ast.AST):
                        self._any(item)
            elif isinstance(value, ast.expr):
                self.expr(value)
            elif isinstance(value, ast.AST):
                self._any(value)

    def e_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load):
            self.expr(node.value)
        else:
            self.target(node)

    def e_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Name):
                self._maybe(node.value, (MAYBE_SUBSCRIPT, None))
            self.expr(node.value)
            self.expr(node.slice)
        else:
            self.target(node)

    def e_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            self._maybe(func, (MAYBE_CALLEE, None))
            callee = func.id
        elif isinstance(func, ast.Attribute):
            self._maybe(func.value, (MAYBE_METHOD, func.attr))
            callee = None
        else:
            self._maybe(func, (MAYBE_CALLEE, None))
            callee = None
        for arg in node.args:
            self._maybe(arg, (MAYBE_ARG, callee))
        for kw in node.keywords:
            self._maybe(kw.value, (MAYBE_ARG, callee))
        self.expr(node.func)
        for arg in node.args:
            self.expr(arg)
        for kw in node.keywords:
            self.expr(kw.value)

    def e_Starred(self, node: ast.Starred) -> None:
        if isinstance(node.ctx, ast.Load):
            self.expr(node.value)
        else:
            self.target(node.value)

    def e_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.expr(node.value)
        scope = self._binding_scope_for_walrus()
        scope.binds.add(node.target.id)

    def e_Lambda(self, node: ast.Lambda) -> None:
        self._arguments_outer(node.args)
        parent = self._push("function")
        self._arguments_inner(node.args)
        self.expr(node.body)
        self._pop(parent)

    def _comprehension(self, node: Union[ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp], kind: str,
                       elts: Sequence[ast.expr]) -> None:
        generators = node.generators
        for gen in generators:
            self._maybe(gen.iter, (MAYBE_ITER, None))
        self.expr(generators[0].iter)
        parent = self._push(kind)
        for i, gen in enumerate(generators):
            if i:
                self.expr(gen.iter)
            self.target(gen.target)
            for cond in gen.ifs:
                self.expr(cond)
        for elt in elts:
            self.expr(elt)
        self._pop(parent)

    def e_ListComp(self, node: Union[ast.ListComp, ast.SetComp]) -> None:
        self._comprehension(node, "comp", [node.elt])

    e_SetComp = e_ListComp

    def e_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, "comp", [node.key, node.value])

    def e_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node, "genexp", [node.elt])

    def e_Yield(self, node: Union[ast.Yield, ast.YieldFrom, ast.Await]) -> None:
        if self.scope is self.top:
            self.yields = True
        if node.value is not None:
            self.expr(node.value)

    e_YieldFrom = e_Yield
    e_Await = e_Yield

    def _arguments_outer(self, args: ast.arguments) -> None:
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self.expr(default)
        for arg in _all_args(args):
            if arg.annotation is not None:
                self.expr(arg.annotation)

    def _arguments_inner(self, args: ast.arguments) -> None:
        for arg in _all_args(args):
            self._bind(arg.arg)


def _all_args(args: ast.arguments) -> List[ast.arg]:
    out = list(getattr(args, "posonlyargs", [])) + list(args.args)
    if args.vararg is not None:
        out.append(args.vararg)
    out += list(args.kwonlyargs)
    if args.kwarg is not None:
        out.append(args.kwarg)
    return out

