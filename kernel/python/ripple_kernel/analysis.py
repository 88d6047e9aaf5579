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
statement. ``compile_statement`` turns a statement into a code object that
reports its value to the run (see Hooks) and is cached by text and column;
a statement that only moved is re-positioned, not recompiled.
"""

import ast
import types

VALUE_HOOK = "__ripple_value__"
# A statement's direct call f(a, k=b) runs as
# CALLEE_HOOK(f)(*ARGS_HOOK(a, k=b), **KWARGS_HOOK()): the hooks record the
# callee and the arguments, and the call itself is made by the statement's
# own code, so the callee's caller frame is the user's (sys._getframe(1)
# in namedtuple, Enum's functional API, logging and warnings see the
# statement, not the engine).
CALLEE_HOOK = "__ripple_callee__"
ARGS_HOOK = "__ripple_args__"
KWARGS_HOOK = "__ripple_kwargs__"
RETURN_HOOK = "__ripple_return__"

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
                 "maybe", "later_writes")

    def __init__(self, uses, binds, defines, mutates, lazy, compound, returns, yields, label, key, imports=(),
                 maybe=frozenset(), later_writes=frozenset()):
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
        # Names the statement may mutate through code it calls (5.3, issue
        # 13): (name, reason) pairs, reason one of MAYBE_ARG (an argument of
        # a call; the callee's name as its second item, or None), MAYBE_METHOD
        # (the receiver of a method call; the method's name), MAYBE_CALLEE
        # (a called name: a closure's or generator's state), MAYBE_ITER
        # (iterated or unpacked: an iterator is consumed). The run decides
        # from the values at hand whether one can have an effect (Runner).
        self.maybe = maybe
        # Names nested functions of the statement rebind in the frame when
        # they are called later (`nonlocal n`): a statement calling one
        # binds them.
        self.later_writes = later_writes


MAYBE_ARG, MAYBE_METHOD, MAYBE_CALLEE, MAYBE_ITER = "arg", "method", "callee", "iter"


class Analyzer:
    """Caches StmtInfo and compiled statement code by source text.

    Not thread-safe: the kernel runs one request at a time.
    """

    def __init__(self):
        self._infos = {}  # segment text -> StmtInfo
        self._codes = {}  # (filename, text, col, flags) -> {lineno: code}

    def info(self, text, node):
        info = self._infos.get(text)
        if info is None:
            if len(self._infos) > _CACHE_LIMIT:
                self._infos.clear()
            info = analyze(node)
            self._infos[text] = info
        return info

    def code(self, filename, text, node, flags=0, self_name=None, func_name=None):
        """Code object of the transformed statement node, positioned at node.
        self_name, func_name: see compile_statement."""
        slot_key = (filename, text, node.col_offset, flags, self_name)
        slot = self._codes.get(slot_key)
        if slot is None:
            if len(self._codes) > _CACHE_LIMIT:
                self._codes.clear()
            slot = self._codes[slot_key] = {}
        # The same text in two functions (test_a's "x = 1" and test_b's) is
        # compiled once: only the code's name and lines differ.
        code = slot.get((node.lineno, func_name))
        if code is None:
            base = slot.get(1)
            if base is None:
                # Compiled once at line 1, then moved: a statement that only
                # changed lines is not compiled again.
                base = slot[1] = compile_statement(node, filename, flags, first_line=1, self_name=self_name,
                                                   nonlocals="nonlocal" in text, returns="return" in text)
            code = _named(_shift(base, node.lineno - 1), func_name)
            slot[(node.lineno, func_name)] = code
        return code


def analyze(node):
    """StmtInfo of one statement node."""
    scan = _Scan()
    scan.stmt(node)
    top = scan.top
    uses = set(top.reads)
    lazy = set()
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
    )


def future_flags(tree):
    """The compiler flags of the module's `from __future__` imports."""
    import __future__

    flags = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__future__, alias.name, None)
                if feature is not None:
                    flags |= feature.compiler_flag
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            break
    return flags


def node_key(node):
    """The node's structure without positions, as a string: equal for two
    nodes exactly when ast.dump's is (types, fields in order, constants'
    reprs, which delimit themselves), at half its cost; keys are taken of
    every statement at every compile and run."""
    out = []
    append = out.append
    AST = ast.AST

    def walk(x):
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


def label_base(node):
    """The definition label of a statement (5.2), or None for a "#k" statement."""
    if isinstance(node, ast.Assign):
        names = []
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


def _target_names(target, out):
    if isinstance(target, ast.Name):
        out.append(target.id)
        return True
    if isinstance(target, ast.Starred):
        return _target_names(target.value, out)
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_target_names(elt, out) for elt in target.elts)
    return False


def labels(infos):
    """The 5.2 labels of a body's statements, given their StmtInfos in order."""
    counts = {}
    other = 0
    out = []
    for info in infos:
        base = info.label
        if base is None:
            other += 1
            out.append("#%d" % other)
        else:
            n = counts.get(base, 0) + 1
            counts[base] = n
            out.append(base if n == 1 else "%s#%d" % (base, n))
    return out


def parameter_names(args):
    """Parameter names of an ast.arguments, in signature order."""
    names = [a.arg for a in getattr(args, "posonlyargs", [])]
    names += [a.arg for a in args.args]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return names


def root_name(node):
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

    def __init__(self, kind):
        self.kind = kind  # "stmt", "function", "class", "comp", "genexp"
        self.reads = set()
        self.binds = set()
        self.declared = set()  # global/nonlocal names: not local here
        self.mutates = set()
        self.children = []
        self.free = set()
        self.lazy_free = set()
        self.lazy = kind in ("function", "genexp")

    def close(self):
        """Compute free and lazy_free from own reads and children."""
        local = self.binds - self.declared
        free = set()
        lazy_free = set()
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

    def __init__(self):
        self.top = _Scope("stmt")
        self.scope = self.top
        self.stack = [self.top]
        self.returns = False
        self.yields = False
        self.imports = []
        self.maybe = set()
        self.later_writes = set()

    def _runs_now(self):
        """Whether code at this point runs while the statement runs (not in
        a nested function or lambda, which run when called)."""
        for scope in self.stack:
            if scope.kind == "function":
                return False
        return True

    def _maybe(self, node, reason):
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

    def _push(self, kind):
        scope = _Scope(kind)
        self.scope.children.append(scope)
        parent = self.scope
        self.scope = scope
        self.stack.append(scope)
        return parent

    def _pop(self, parent):
        scope = self.scope
        scope.close()
        # Mutations done while the statement runs (comprehension bodies) are
        # the statement's; those in functions happen later, when called.
        if scope.kind in ("comp", "class"):
            parent.mutates |= scope.mutates - scope.binds
        self.stack.pop()
        self.scope = parent

    def _bind(self, name):
        self.scope.binds.add(name)

    def _binding_scope_for_walrus(self):
        for scope in reversed(self.stack):
            if scope.kind != "comp":
                return scope
        return self.top

    def _mutate(self, node):
        name = root_name(node)
        if name is not None:
            self.scope.mutates.add(name)

    # -- statements ---------------------------------------------------------

    def stmt(self, node):
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic(node)

    def stmts(self, nodes):
        for node in nodes:
            self.stmt(node)

    def _value_base_mutation(self, value):
        if self.scope is self.top and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            self._mutate(value.func.value)

    def s_Expr(self, node):
        self._value_base_mutation(node.value)
        self.expr(node.value)

    def s_Assign(self, node):
        if any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            self._maybe(node.value, (MAYBE_ITER, None))  # unpacking consumes an iterator
        self._value_base_mutation(node.value)
        self.expr(node.value)
        for target in node.targets:
            self.target(target)

    def s_AnnAssign(self, node):
        if node.value is not None:
            self._value_base_mutation(node.value)
            self.expr(node.value)
        self.expr(node.annotation)
        if node.value is not None or not isinstance(node.target, ast.Name):
            self.target(node.target)

    def s_AugAssign(self, node):
        self._value_base_mutation(node.value)
        self.expr(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            self.scope.reads.add(target.id)
            self._bind(target.id)
            self.scope.mutates.add(target.id)
        else:
            self.expr(target.value)
            if isinstance(target, ast.Subscript):
                self.expr(target.slice)
            self._mutate(target)

    def s_Return(self, node):
        if self.scope is self.top:
            self.returns = True
        if node.value is not None:
            self._value_base_mutation(node.value)
            self.expr(node.value)

    def s_Delete(self, node):
        for target in node.targets:
            # `del x` reads x: it fails when x is unbound, so it depends on
            # the statement that bound it.
            for child in ast.walk(target):
                if isinstance(child, ast.Name):
                    self.scope.reads.add(child.id)
            self.target(target)

    def s_Import(self, node):
        for alias in node.names:
            self._bind(alias.asname or alias.name.split(".")[0])
            self.imports.append((0, alias.name, ((alias.name, alias.asname),), False))

    def s_ImportFrom(self, node):
        for alias in node.names:
            if alias.name != "*":
                self._bind(alias.asname or alias.name)
        names = tuple((a.name, a.asname) for a in node.names)
        self.imports.append((node.level or 0, node.module or "", names, True))

    def s_Global(self, node):
        self.scope.declared.update(node.names)

    def s_Nonlocal(self, node):
        self.scope.declared.update(node.names)
        self.later_writes.update(node.names)

    def s_FunctionDef(self, node):
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

    def s_ClassDef(self, node):
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

    def s_For(self, node):
        self._maybe(node.iter, (MAYBE_ITER, None))
        self.expr(node.iter)
        self.target(node.target)
        self.stmts(node.body)
        self.stmts(node.orelse)

    s_AsyncFor = s_For

    def s_ExceptHandler(self, node):
        if node.type is not None:
            self.expr(node.type)
        if node.name:
            self._bind(node.name)
        self.stmts(node.body)

    def generic(self, node):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    self._any(item)
            elif isinstance(value, ast.AST):
                self._any(value)

    def _any(self, node):
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
                self._bind(node.name)
            elif kind == "MatchMapping" and getattr(node, "rest", None):
                self._bind(node.rest)
            self.generic(node)

    # -- expressions ---------------------------------------------------------

    def target(self, node):
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

    def expr(self, node):
        if node is None:
            return
        kind = type(node)
        if kind is ast.Name:
            if isinstance(node.ctx, ast.Load):
                self.scope.reads.add(node.id)
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

    def e_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            self.expr(node.value)
        else:
            self.target(node)

    def e_Subscript(self, node):
        if isinstance(node.ctx, ast.Load):
            self.expr(node.value)
            self.expr(node.slice)
        else:
            self.target(node)

    def e_Call(self, node):
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

    def e_Starred(self, node):
        if isinstance(node.ctx, ast.Load):
            self.expr(node.value)
        else:
            self.target(node.value)

    def e_NamedExpr(self, node):
        self.expr(node.value)
        scope = self._binding_scope_for_walrus()
        scope.binds.add(node.target.id)

    def e_Lambda(self, node):
        self._arguments_outer(node.args)
        parent = self._push("function")
        self._arguments_inner(node.args)
        self.expr(node.body)
        self._pop(parent)

    def _comprehension(self, node, kind, elts):
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

    def e_ListComp(self, node):
        self._comprehension(node, "comp", [node.elt])

    e_SetComp = e_ListComp

    def e_DictComp(self, node):
        self._comprehension(node, "comp", [node.key, node.value])

    def e_GeneratorExp(self, node):
        self._comprehension(node, "genexp", [node.elt])

    def e_Yield(self, node):
        if self.scope is self.top:
            self.yields = True
        if node.value is not None:
            self.expr(node.value)

    e_YieldFrom = e_Yield
    e_Await = e_Yield

    def _arguments_outer(self, args):
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self.expr(default)
        for arg in _all_args(args):
            if arg.annotation is not None:
                self.expr(arg.annotation)

    def _arguments_inner(self, args):
        for arg in _all_args(args):
            self._bind(arg.arg)


def _all_args(args):
    out = list(getattr(args, "posonlyargs", [])) + list(args.args)
    if args.vararg is not None:
        out.append(args.vararg)
    out += list(args.kwonlyargs)
    if args.kwarg is not None:
        out.append(args.kwarg)
    return out


# -- transformation and compilation --------------------------------------------


def compile_statement(node, filename, flags=0, first_line=None, self_name=None, func_name=None, nonlocals=True,
                      returns=True):
    """Compile one body statement so that it reports its value.

    The value of an assignment, annotated assignment, expression statement
    or return is passed through VALUE_HOOK; when it is a call, its callee
    and arguments go through CALLEE_HOOK, ARGS_HOOK and KWARGS_HOOK first
    (so the run can see them; the call stays the statement's); every ``return``
    outside nested scopes becomes a call of RETURN_HOOK, which raises. Line
    numbers and columns stay the user's, so tracebacks point at the source.

    self_name: the statement is in a method whose first parameter is
    self_name and whose class the run puts in the namespace as __class__:
    a zero-argument super() becomes super(__class__, self_name), which the
    compiler does for a method's own code (a statement compiled on its own
    has neither the __class__ cell nor the method's first argument).

    func_name: the name of the function the statement belongs to, given to
    its code so that a traceback or sys._getframe().f_code.co_name shows
    the function, not "<module>".

    nonlocals, returns: whether the statement may contain a `nonlocal` or a
    `return` (False when its text does not say so: rewriting them walks the
    whole tree, a good part of the cost of compiling a statement).
    """
    new = _transform(node, nonlocals, returns)
    if self_name is not None:
        new = _SuperRewriter(self_name).visit(new)
    if first_line is not None and first_line != new.lineno:
        ast.increment_lineno(new, first_line - new.lineno)
    module = ast.Module(body=[new], type_ignores=[])
    ast.fix_missing_locations(module)
    return _named(compile(module, filename, "exec", flags=flags, dont_inherit=True), func_name)


def _named(code, func_name):
    """code named func_name (see compile_statement); unchanged for None."""
    if not func_name:
        return code
    if hasattr(code, "co_qualname"):
        return code.replace(co_name=func_name, co_qualname=func_name)
    return code.replace(co_name=func_name)


def compile_expression(source, filename="<ripple>"):
    """Compile a user-supplied expression (arguments, visualizations)."""
    return compile(source.strip(), filename, "eval", dont_inherit=True)


def _wrap(value):
    if isinstance(value, ast.Call):
        orig = value
        callee = ast.Call(func=ast.Name(id=CALLEE_HOOK, ctx=ast.Load()), args=[orig.func], keywords=[])
        record = ast.Call(func=ast.Name(id=ARGS_HOOK, ctx=ast.Load()), args=list(orig.args), keywords=list(orig.keywords))
        kwargs = ast.Call(func=ast.Name(id=KWARGS_HOOK, ctx=ast.Load()), args=[], keywords=[])
        starred = ast.Starred(value=record, ctx=ast.Load())
        spread = ast.keyword(arg=None, value=kwargs)
        value = ast.Call(func=callee, args=[starred], keywords=[spread])
        # Every new node takes the call's place: a traceback through the
        # call points at the user's call.
        for node in (value, callee, callee.func, record, record.func, kwargs, kwargs.func, starred, spread):
            ast.copy_location(node, orig)
    call = ast.Call(func=ast.Name(id=VALUE_HOOK, ctx=ast.Load()), args=[value], keywords=[])
    ast.copy_location(call, value)
    ast.copy_location(call.func, value)
    return call


def _return_call(node):
    value = _wrap(node.value) if node.value is not None else ast.Constant(value=None)
    if node.value is None:
        ast.copy_location(value, node)
    call = ast.Call(func=ast.Name(id=RETURN_HOOK, ctx=ast.Load()), args=[value], keywords=[])
    ast.copy_location(call, node)
    ast.copy_location(call.func, node)
    stmt = ast.Expr(value=call)
    return ast.copy_location(stmt, node)


def clone(node):
    """A deep copy of an AST: fields copied recursively, positions kept.
    Several times faster than copy.deepcopy, whose generic path a
    statement's compile paid every time. Parsed trees share no nodes but
    the ctx singletons, which are kept as they are."""
    if isinstance(node, list):
        return [clone(x) for x in node]
    if not isinstance(node, ast.AST) or isinstance(node, ast.expr_context):
        return node  # str, numbers, None, constant values: immutable
    new = node.__class__()
    for name in node._fields:
        value = getattr(node, name, None)
        setattr(new, name, clone(value) if isinstance(value, (list, ast.AST)) else value)
    for name in node._attributes:
        value = getattr(node, name, None)
        if value is not None:
            setattr(new, name, value)
    return new


def _transform(node, nonlocals=True, returns=True):
    node = clone(node)
    if isinstance(node, (ast.Assign, ast.Expr)) or (isinstance(node, ast.AnnAssign) and node.value is not None):
        node.value = _wrap(node.value)
        if nonlocals:
            _fix_nested(node)
        return node
    if isinstance(node, ast.Return):
        new = _return_call(node)
        if nonlocals:
            _fix_nested(new)
        return new
    if returns:
        _ReturnRewriter().visit(node)
    if nonlocals:
        _fix_nested(node)
    return node


class _SuperRewriter(ast.NodeTransformer):
    """super() -> super(__class__, self_name), outside nested scopes
    (compile_statement)."""

    def __init__(self, self_name):
        self.self_name = self_name

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args and not node.keywords:
            node.args = [
                ast.copy_location(ast.Name(id="__class__", ctx=ast.Load()), node),
                ast.copy_location(ast.Name(id=self.self_name, ctx=ast.Load()), node),
            ]
        return node

    def visit_FunctionDef(self, node):
        return node  # a nested def has its own super()

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef


class _ReturnRewriter(ast.NodeTransformer):
    """Replaces returns outside nested scopes by RETURN_HOOK calls."""

    def visit_Return(self, node):
        return _return_call(node)

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef


def _fix_nested(node):
    """Make nested functions' ``nonlocal`` names of the frame work.

    The statements of a frame run at the top level of one namespace dict, so
    the frame's locals are globals for the code nested in them: a
    ``nonlocal x`` naming a frame local must become ``global x``.
    """
    _NonlocalFixer([]).visit(node)


class _NonlocalFixer(ast.NodeVisitor):
    def __init__(self, enclosing):
        self.enclosing = enclosing  # sets of names bound by enclosing nested functions

    def visit_FunctionDef(self, node):
        bound = _function_locals(node)
        inner = _NonlocalFixer(self.enclosing + [bound])
        for stmt in node.body:
            inner._fix_statement(stmt)
            inner.visit(stmt)
        for dec in node.decorator_list:
            self.visit(dec)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _fix_statement(self, stmt):
        if isinstance(stmt, ast.Nonlocal):
            outer = self.enclosing[:-1]
            frame_names = [n for n in stmt.names if not any(n in s for s in outer)]
            if frame_names and len(frame_names) == len(stmt.names):
                stmt.__class__ = ast.Global
            elif frame_names:
                # Mixed: keep the nonlocal ones; the rest cannot be expressed
                # in one statement, leave as is (compile reports it).
                pass


def _function_locals(node):
    names = set(parameter_names(node.args))
    for child in ast.walk(node):
        if child is node:
            continue
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            names.add(child.id)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(child.name)
    return names


def _shift(code, delta):
    """code with every line number moved by delta (nested code included)."""
    if delta == 0:
        return code
    consts = tuple(_shift(c, delta) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + delta, co_consts=consts)
