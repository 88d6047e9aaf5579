"""Running one frame of a context's stack with per-expression caching.

This file is where the caching invariant of PROTOCOL.md 5.3 is kept:

    for deterministic code, after any sequence of edits, recomputes, pushes,
    pops and interrupts, the values reported equal what a fresh run of the
    current sources reports.

How (the lead's design, with the refinements marked *):

- A Frame owns a cache keyed by expression id. An Entry holds the
  statement's key (normalised source), ``sig`` (for every name it used, the
  stamp of the statement that defined it, the frame's parameter stamp, or the
  global's version), its own ``stamp`` (a fresh number from a kernel-wide
  counter each time it runs), the ``bindings`` it left (the values of the
  names it defines right after it ran, or DELETED) and the update it sent.
  Panics and interrupted statements never get an entry.
- A Plan is the static view of the frame's function: statements, labels, ids,
  and for each statement the definer of every name it uses (the last earlier
  statement defining it, else a parameter, else a module global or builtin).
  * A compound statement (if/for/while/with/try) may leave a name unbound on
    some path, so it also depends on the earlier definer of every name it
    defines.
  * A name bound to code that runs later (a lambda, nested def, generator)
    carries the free names of that code: a statement using the name also
    depends on the definers of those names at its own position (the code
    reads them when called there).
- The rerun set R starts with every statement that has no entry, a different
  key, a different sig (a definer ran again, a global changed), or whose
  entry was dropped by ``invalidate``; then to a fixed point: dependents of
  members join R, and when a member mutates (or augments) a name, the
  statements of that name's definition chain before it join R too, so a
  mutation is never applied twice to a cached object.
  * The chain also follows, for every chain member, the names it read whose
    cached value may be mutable: ``ys = xs; ys.append(1)`` re-runs ``xs = []``
    as well, since ys and xs are one object. Values that cannot be mutated
    (numbers, strings, tuples of those, functions, classes, modules) stop it.
  * A chain that reaches a parameter of an ExplicitCall frame re-evaluates
    the arguments (fresh objects, a new parameter stamp).
- Statements run in source order in ONE namespace dict per frame, the same
  dict across runs (cleared and refilled at the start of a run: the module's
  globals minus every name bound in the body, plus the parameters), so
  lambdas, comprehensions and nested functions see the frame's locals as in a
  real call, and closures made in an earlier run see the current values.
  Cached statements re-apply their bindings; R statements run.
- Interrupt: a KeyboardInterrupt in user code drops the running statement's
  entry (its value is not cached, its partial effects are redone next run
  through the rules above), keeps everything computed before, and re-raises.
  Statements of R after it keep their old entries: the reason they were in R
  (a stamp or key mismatch, a missing entry) is still there next run.
- * An edit's run costs what changed, not the body's length (issue 16),
  with the outcome of the rules above unchanged: a Plan derived from the
  last one says which statements it replaced, and the Frame carries from
  run to run which statements may fail the check and which the loop must
  visit one by one (Frame._forget_sync, Runner._sync); the cached ones in
  between are applied in bulk (Runner._apply_clean).
"""

import ast
import bisect
import builtins
import itertools
import operator
import sys
import time
import types

from . import analysis, values
from . import modules as project_modules

LOCAL, PARAM, GLOBAL = 0, 1, 2
# A script's import statement depends on the versions of the project
# modules it imports (ref: the module names); see build_script_plan.
IMPORT = 3
SCRIPT = "__main__"  # the qualname of a module's top level run as a script (7.1)
DELETED = object()  # binding mark: the name was unbound after the statement
BLOCK = 32  # statements per block of merged bindings (Frame.blocks)
PENDING = "pending"  # reported-state marks (identity compared)
NOT_REACHED = "not reached"

_IMMUTABLE_TYPES = frozenset(
    [
        int,
        float,
        complex,
        str,
        bytes,
        bool,
        type(None),
        range,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        types.ModuleType,
        type,
        type(Ellipsis),
    ]
)


class Failure(Exception):
    """A run cannot start or continue: the execute result names it."""

    def __init__(self, kind, message, diagnostic=None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.diagnostic = diagnostic

    def result(self):
        result = {"kind": self.kind, "message": self.message}
        if self.diagnostic is not None:
            result["diagnostic"] = self.diagnostic
        return {"status": "failed", "result": result}


class Entry:
    """The cached outcome of one statement's last successful run."""

    __slots__ = ("key", "dep_names", "sig", "stamp", "bindings", "update", "value", "returned", "call", "gwrites",
                 "seen", "layout", "deletes")

    def __init__(self, key, dep_names, sig, stamp, bindings, update, value, returned, call, gwrites=(),
                 seen=None, layout=None):
        self.key = key
        self.dep_names = dep_names
        self.sig = sig
        self.stamp = stamp
        self.bindings = bindings
        self.update = update
        self.value = value
        self.returned = returned
        self.call = call  # (callee, args, kwargs) of a direct call, or None
        self.gwrites = gwrites  # (module, name) of the module globals it rebound (module state)
        # The mutations (mutator id, stamp) that earlier statements had
        # made to the objects it read when it ran, and the frame's layout
        # then (Runner._seen_mutations); None: not known, not checked.
        self.seen = seen
        self.layout = layout
        # A binding is DELETED: the run loop applies it on its own
        # (Runner._apply_clean merges only plain bindings).
        self.deletes = any(v is DELETED for _, v in bindings)


class TrackedDict(dict):
    """A dict that notes which keys were set or removed since its owner
    last looked (touched; cleared: everything may have changed).

    A Frame's cache and reported are TrackedDicts: Runner._sync folds what
    changed since the last run into the frame's incremental bookkeeping
    (the statements to check, to visit one by one, the merged bindings),
    then empties touched. Every way of changing the dict records it; a
    key noted that did not change (a pop of a missing key) only costs a
    look."""

    __slots__ = ("touched", "cleared")

    def __init__(self):
        super().__init__()
        self.touched = set()
        self.cleared = False

    def __setitem__(self, key, value):
        self.touched.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        self.touched.add(key)
        dict.__delitem__(self, key)

    def pop(self, key, *default):
        self.touched.add(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key, default=None):
        self.touched.add(key)
        return dict.setdefault(self, key, default)

    def popitem(self):
        self.cleared = True
        return dict.popitem(self)

    def clear(self):
        self.cleared = True
        self.touched.clear()
        dict.clear(self)

    def update(self, *args, **kwargs):
        self.cleared = True
        dict.update(self, *args, **kwargs)

    def __ior__(self, other):
        self.cleared = True
        return dict.__ior__(self, other)

    def __reduce__(self):
        return (dict, (dict(self),))


class PlanStmt:
    __slots__ = ("index", "id", "node", "text", "info", "range", "deps", "dep_names", "local_deps", "dep_of", "defines")

    def __init__(self, index, id_, node, text, info, range_):
        self.index = index
        self.id = id_
        self.node = node
        self.text = text
        self.info = info
        self.range = range_
        self.deps = ()  # ((name, kind, ref), ...) sorted by name
        self.dep_names = ()
        self.local_deps = ()  # indices of local definers
        self.dep_of = {}  # name -> (kind, ref)
        # info.defines plus the frame names that nested functions it calls
        # rebind through `nonlocal` (Plan.writes): the names whose values
        # its cache entry keeps.
        self.defines = info.defines


class Plan:
    """Static view of one function body at one source generation."""

    __slots__ = (
        "module",
        "qualname",
        "generation",
        "filename",
        "path",
        "stmts",
        "params",
        "bound",
        "flags",
        "rdeps",
        "by_id",
        "node_memo",
        "carried",
        "writes",
        "args_dump",
        "serial",
        "parent",
        "changed",
        "nodes",
        "ids",
        "layout_token",
        "users",
        "imports",
        "has_writes",
        "declared",
        "import_nodes",
        "definers",
    )

    def __init__(self, module, qualname, generation, filename, path):
        self.module = module
        self.qualname = qualname
        self.generation = generation
        self.filename = filename
        self.path = path
        self.stmts = []
        self.params = []
        self.bound = frozenset()
        self.flags = 0
        self.rdeps = []
        self.by_id = {}
        self.node_memo = {}  # id(node) -> (node, text, info): reuse across generations
        self.carried = []  # per statement: free names of later-running code its names carry
        # per statement: frame names that later-running code its names carry
        # rebinds (`nonlocal`): a statement reading such a name may call it.
        self.writes = []
        self.args_dump = ""
        # How this plan relates to the one it was made from, for the
        # frame's incremental bookkeeping (Runner._sync): serial names the
        # plan; parent is the serial of the plan _update_plan derived it
        # from (None: built from scratch, nothing is known to be shared)
        # and changed the indices whose PlanStmt differs from the parent's
        # (every other index holds the parent's very PlanStmt object).
        self.serial = next(_PLAN_SERIALS)
        self.parent = None
        self.changed = None
        self.nodes = []  # the body's statement nodes (PlanStmt.node), in order
        self.ids = []  # the statements' ids, in order
        # The same object for plans whose ids are the same, in the same
        # order (Runner._layout); _update_plan passes it on.
        self.layout_token = object()
        self.users = {}  # module global name -> indices of the statements with a GLOBAL dep on it
        self.imports = ()  # indices of the statements with an IMPORT dep (scripts)
        self.import_nodes = ()  # indices of import statements (scripts: build_script_plan)
        # name -> ascending indices of the statements whose defines hold it
        # (the last definer before k: bisect); _update_plan shares it, as
        # it keeps every statement's defines.
        self.definers = {}
        self.has_writes = False  # any(writes)
        self.declared = None  # _declared_globals(self), once computed


_PLAN_SERIALS = itertools.count(1)


def find_function(src, qualname):
    """The (last) def node of qualname (``f`` or ``Class.method``) in the
    module version src, or None. The top-level names are indexed once per
    version: a test module of a thousand functions is searched per run."""
    defs = src.defs
    if defs is None:
        defs = {}
        for child in src.tree.body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[child.name] = child  # the last definition wins, as at run time
        src.defs = defs
    parts = qualname.split(".")
    node = defs.get(parts[0])
    for part in parts[1:]:
        if node is None:
            return None
        found = None
        for child in node.body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child.name == part:
                found = child
        node = found
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return node


def build_plan(analyzer, source, module, qualname, func, previous=None):
    """The Plan of func (an ast def node) in source.

    When exactly one statement changed since previous (an incremental parse
    keeps the other nodes) and it binds the same names, only that statement
    is analysed again: every other statement's definers are unchanged.
    """
    args_dump = analysis.node_key(func.args)
    if previous is not None:
        plan = _update_plan(analyzer, source, module, qualname, func, previous, args_dump)
        if plan is not None:
            return plan
    plan = Plan(module, qualname, source.generation, source.filename, source.path)
    plan.args_dump = args_dump
    memo_old = previous.node_memo if previous is not None else {}
    memo = plan.node_memo
    infos = []
    texts = []
    for node in func.body:
        hit = memo_old.get(id(node))
        if hit is not None and hit[0] is node:
            text, info = hit[1], hit[2]
        else:
            text = source.segment(node)
            info = analyzer.info(text, node)
        memo[id(node)] = (node, text, info)
        texts.append(text)
        infos.append(info)
    labels = analysis.labels(infos)
    prefix = "%s:%s/" % (module, qualname)
    params = analysis.parameter_names(func.args)
    plan.params = params
    param_set = frozenset(params)
    bound = set()
    last = {}
    carried = []
    writes = []
    users = {}
    definers = {}
    rdeps = [[] for _ in func.body]
    for i, node in enumerate(func.body):
        info = infos[i]
        ps = PlanStmt(i, prefix + labels[i], node, texts[i], info, source.node_range(node))
        names = set(info.uses)
        if info.compound:
            names |= info.defines
        resolved = {}
        queue = list(names)
        written = set()
        while queue:
            name = queue.pop()
            if name in resolved:
                continue
            j = last.get(name)
            if j is not None:
                resolved[name] = (LOCAL, j)
                for extra in carried[j]:
                    if extra not in resolved:
                        queue.append(extra)
                # A call of code that rebinds a frame name through
                # `nonlocal` binds it, or leaves it (a conditional binding:
                # it depends on the earlier definer too).
                for extra in writes[j]:
                    written.add(extra)
                    if extra not in resolved:
                        queue.append(extra)
            elif name in param_set:
                resolved[name] = (PARAM, None)
            else:
                resolved[name] = (GLOBAL, None)
        if written:
            ps.defines = info.defines | written
        deps = tuple((name,) + resolved[name] for name in sorted(resolved))
        ps.deps = deps
        ps.dep_names = tuple(d[0] for d in deps)
        ps.dep_of = resolved
        for name, kind, _ in deps:
            if kind == GLOBAL:
                users.setdefault(name, []).append(i)
        local = sorted({ref for _, kind, ref in deps if kind == LOCAL})
        ps.local_deps = tuple(local)
        for j in local:
            rdeps[j].append(i)
        carry = set(info.lazy)
        for j in local:
            carry |= carried[j]
        carried.append(frozenset(carry) if carry else frozenset())
        wr = set(info.later_writes)
        for j in local:
            wr |= writes[j]
        writes.append(frozenset(wr) if wr else frozenset())
        for name in ps.defines:
            last[name] = i
            definers.setdefault(name, []).append(i)
        bound |= info.binds
        plan.stmts.append(ps)
        plan.by_id[ps.id] = ps
    plan.bound = frozenset(bound)
    plan.rdeps = rdeps
    plan.carried = carried
    plan.writes = writes
    plan.has_writes = any(writes)
    plan.users = {name: tuple(idx) for name, idx in users.items()}
    plan.definers = definers
    plan.nodes = list(func.body)
    plan.ids = [ps.id for ps in plan.stmts]
    plan.flags = analysis.future_flags(source.tree)
    return plan


class _ScriptBody:
    """A module's top level seen as a function body of no parameters."""

    __slots__ = ("body", "args")
    _NO_ARGS = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])

    def __init__(self, tree):
        self.body = tree.body
        self.args = self._NO_ARGS


def build_script_plan(analyzer, source, module, modules, previous=None):
    """The Plan of module's top level run as a script (PROTOCOL.md 7.1).

    It is a function body's plan (5.3 with the script's globals as its
    locals: the namespace is the frame's) with two differences: a def,
    class or import statement is labelled by the names it binds, and an
    import statement of project modules depends on their versions (an IMPORT
    dep), so editing an imported module re-runs the import and what reads
    its names, as a reload re-binds a module's globals.
    """
    plan = build_plan(analyzer, source, module, SCRIPT, _ScriptBody(source.tree), previous)
    stmts = plan.stmts
    rec = modules.records.get(module)
    if (
        previous is not None
        and plan.parent == previous.serial
        and all(_script_base(stmts[k]) == _script_base(previous.stmts[k]) for k in plan.changed)
    ):
        # One statement at most changed, binding the same names under the
        # same label (_update_plan), and its script label base is the same:
        # every label stays. Only import statements need a look, as below.
        changed = set(plan.changed)
        import_nodes = [k for k in previous.import_nodes if k not in changed]
        import_nodes += [k for k in changed if isinstance(stmts[k].node, (ast.Import, ast.ImportFrom))]
        import_nodes.sort()
        for k in import_nodes:
            _add_import_dep(stmts[k], rec, modules)
        plan.import_nodes = tuple(import_nodes)
        plan.imports = tuple(k for k in import_nodes if stmts[k].deps and stmts[k].deps[-1][1] == IMPORT)
        return plan
    labels = script_labels(stmts)
    prefix = "%s:%s/" % (module, SCRIPT)
    relabel = False
    import_nodes = []
    for ps, label in zip(stmts, labels):
        if ps.id != prefix + label:
            ps.id = prefix + label
            relabel = True
        if isinstance(ps.node, (ast.Import, ast.ImportFrom)):
            import_nodes.append(ps.index)
            _add_import_dep(ps, rec, modules)
    if relabel:
        plan.by_id = {ps.id: ps for ps in stmts}
        plan.ids = [ps.id for ps in stmts]
        plan.layout_token = object()
        plan.parent = None  # other ids: nothing is carried over (Runner._sync)
        plan.changed = None
    plan.import_nodes = tuple(import_nodes)
    plan.imports = tuple(k for k in import_nodes if stmts[k].deps and stmts[k].deps[-1][1] == IMPORT)
    return plan


def _add_import_dep(ps, rec, modules):
    """Give an import statement of a script its IMPORT dep (once)."""
    if not (ps.deps and ps.deps[-1][1] == IMPORT):
        targets = _import_targets(ps.node, rec, modules)
        if targets:
            ps.deps = ps.deps + (("\0import", IMPORT, targets),)
            ps.dep_names = ps.dep_names + ("\0import",)


def _script_base(ps):
    """The base of a statement's script label (script_labels)."""
    base = ps.info.label
    node = ps.node
    if base is None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            base = node.name
        elif isinstance(node, ast.Import):
            base = ",".join(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ",".join(a.asname or a.name for a in node.names if a.name != "*") or None
    return base


def script_labels(stmts):
    """5.2's labels, except that def, class and import statements are
    labelled by the names they bind (7.1)."""
    counts = {}
    other = 0
    out = []
    for ps in stmts:
        base = _script_base(ps)
        if base is None:
            other += 1
            out.append("#%d" % other)
        else:
            n = counts.get(base, 0) + 1
            counts[base] = n
            out.append(base if n == 1 else "%s#%d" % (base, n))
    return out


def _import_targets(node, rec, modules):
    """The project modules an import statement loads (every package on the way)."""
    found = []
    if isinstance(node, ast.Import):
        bases = [a.name for a in node.names]
    else:
        base = project_modules._resolve(rec, node.level or 0, node.module or "") if rec is not None else None
        if base is None:
            return ()
        bases = [base] + [base + "." + a.name for a in node.names if a.name != "*"]
    for base in bases:
        parts = base.split(".")
        for k in range(1, len(parts) + 1):
            name = ".".join(parts[:k])
            if name not in found and modules.is_project(name):
                found.append(name)
    return tuple(found)


def _update_plan(analyzer, source, module, qualname, func, previous, args_dump):
    old = previous.stmts
    body = func.body
    if (
        previous.module != module
        or previous.qualname != qualname
        or previous.filename != source.filename
        or len(body) != len(old)
        or previous.args_dump != args_dump
        or previous.has_writes
    ):
        return None
    # Which nodes the incremental parse replaced, compared by identity
    # without a Python loop over the body (an edit of a long function).
    moved = list(map(operator.is_not, body, previous.nodes))
    count = moved.count(True)
    if count > 1:
        return None
    plan = Plan(module, qualname, source.generation, source.filename, source.path)
    plan.args_dump = args_dump
    plan.params = previous.params
    plan.bound = previous.bound
    plan.flags = analysis.future_flags(source.tree)
    plan.carried = previous.carried
    plan.writes = previous.writes
    # The ids stay (labels and defined names are unchanged, else the plan
    # is built again), and so does the layout.
    plan.ids = previous.ids
    plan.layout_token = previous.layout_token
    plan.imports = previous.imports
    plan.parent = previous.serial
    plan.definers = previous.definers
    if not count:
        plan.stmts = previous.stmts
        plan.rdeps = previous.rdeps
        plan.by_id = previous.by_id
        plan.node_memo = previous.node_memo
        plan.nodes = previous.nodes
        plan.users = previous.users
        plan.declared = previous.declared
        plan.changed = ()
        return plan
    p = moved.index(True)
    node = body[p]
    text = source.segment(node)
    info = analyzer.info(text, node)
    before = old[p]
    was = before.info
    if (
        info.defines != was.defines
        or info.binds != was.binds
        or info.label != was.label
        or info.lazy != was.lazy
        or info.later_writes
        or info.yields
    ):
        return None
    param_set = frozenset(previous.params)
    names = set(info.uses)
    if info.compound:
        names |= info.defines
    resolved = {}
    queue = list(names)
    carry = set(info.lazy)
    definers = previous.definers
    while queue:
        name = queue.pop()
        if name in resolved:
            continue
        j = _last_before(definers, name, p)
        if j >= 0:
            resolved[name] = (LOCAL, j)
            extra = previous.carried[j]
            carry |= extra
            queue.extend(x for x in extra if x not in resolved)
        elif name in param_set:
            resolved[name] = (PARAM, None)
        else:
            resolved[name] = (GLOBAL, None)
    if frozenset(carry) != previous.carried[p]:
        return None
    ps = PlanStmt(p, before.id, node, text, info, source.node_range(node))
    deps = tuple((name,) + resolved[name] for name in sorted(resolved))
    ps.deps = deps
    ps.dep_names = tuple(d[0] for d in deps)
    ps.dep_of = resolved
    ps.local_deps = tuple(sorted({ref for _, kind, ref in deps if kind == LOCAL}))
    stmts = list(old)
    stmts[p] = ps
    plan.stmts = stmts
    nodes = list(previous.nodes)
    nodes[p] = node
    plan.nodes = nodes
    plan.changed = (p,)
    users = previous.users
    was_global = {name for name, kind, _ in before.deps if kind == GLOBAL}
    is_global = {name for name, kind, _ in deps if kind == GLOBAL}
    gone, added = was_global - is_global, is_global - was_global
    if gone or added:
        users = dict(users)
        for name in gone:
            rest = tuple(k for k in users.get(name, ()) if k != p)
            if rest:
                users[name] = rest
            else:
                users.pop(name, None)
        for name in added:
            users[name] = users.get(name, ()) + (p,)
    plan.users = users
    if "global" not in before.text and "global" not in text:
        plan.declared = previous.declared  # the same statements say `global` (_declared_globals)
    rdeps = previous.rdeps
    if before.local_deps != ps.local_deps:
        rdeps = list(rdeps)
        for j in before.local_deps:
            rdeps[j] = [k for k in rdeps[j] if k != p]
        for j in ps.local_deps:
            rdeps[j] = rdeps[j] + [p]
    plan.rdeps = rdeps
    by_id = dict(previous.by_id)
    by_id[ps.id] = ps
    plan.by_id = by_id
    memo = previous.node_memo
    if len(memo) > 2 * len(body) + 16:
        memo = {id(s.node): (s.node, s.text, s.info) for s in stmts}
    memo[id(node)] = (node, text, info)
    plan.node_memo = memo
    return plan


def _last_before(definers, name, k):
    """The index of the last statement before k defining name (Plan.definers), or -1."""
    idx = definers.get(name)
    if not idx:
        return -1
    at = bisect.bisect_left(idx, k)
    return idx[at - 1] if at else -1


def _immutable(value, depth=0):
    t = type(value)
    if t in _IMMUTABLE_TYPES:
        # A closure holds state its calls may change (a counter), and a
        # bound method can change its object: not immutable.
        if t is types.FunctionType:
            return not value.__closure__
        if t is types.MethodType:
            return depth < 3 and _immutable(value.__self__, depth + 1)
        return True
    if (t is tuple or t is frozenset) and depth < 3 and len(value) <= 64:
        return all(_immutable(v, depth + 1) for v in value)
    return False


def _declared_globals(plan):
    """The module globals a function's body writes by name (outside nested
    scopes): those it declares `global`, and those it assigns as
    globals()['NAME'] (a name that may also be one of its locals: in the
    engine's namespace the two are one entry).

    Nested functions too: their globals are the frame's namespace (the
    frame's locals are globals for them), so their `global X` writes the
    namespace's X, which the run carries to the module like the body's own
    (issue 13). A name the body also binds is left alone: one namespace
    entry cannot be both the frame's local and the module's global."""
    names = set()
    # Only statements whose text says so are walked: a plan is new after
    # every edit, and walking a long body each time costs milliseconds.
    todo = [(ps.node, False) for ps in plan.stmts if "global" in ps.text]
    while todo:
        node, nested = todo.pop()
        found = ()
        if isinstance(node, ast.Global):
            found = node.names
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _is_globals_call(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                found = (key.value,)
        for name in found:
            if not nested or name not in plan.bound:
                names.add(name)
        inner = nested or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
    return frozenset(names)


def _is_globals_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals" and not node.args


def class_cell(func):
    """(class, first parameter name) of a function whose code has a
    __class__ cell (a method that uses super() or __class__), else
    (None, None)."""
    code = getattr(func, "__code__", None)
    if code is None or "__class__" not in code.co_freevars or not func.__closure__ or not code.co_argcount:
        return None, None
    try:
        cls = func.__closure__[code.co_freevars.index("__class__")].cell_contents
    except ValueError:  # an empty cell
        return None, None
    return cls, code.co_varnames[0]


class Frame:
    """One level of a context's stack and its caches.

    Owned by its Context; touched only by the request being served.
    """

    def __init__(self, item_key):
        self.item_key = item_key  # what the stack item said
        self.item = None  # the stack item of the current request
        self.pointer = None  # (module, qualname) of the function it runs
        self.cache = TrackedDict()  # expression id -> Entry
        self.reported = TrackedDict()  # expression id -> last update sent, PENDING, or (NOT_REACHED, range)
        self.namespace = {}  # persistent across runs (see the module doc)
        self.plan = None
        self.params = {}
        self.param_stamp = 0
        self.args_key = None  # ExplicitCall: what the arguments were evaluated from
        # ExplicitCall of a method a class inherits from another class of
        # the module: the qualname its code has (its def's place).
        self.code_qualname = None
        # The arguments were evaluated by this request and no statement has
        # run on them yet: they are as fresh as a refresh would make them.
        self.args_fresh = False
        # The class of a method that uses super() or __class__ (its
        # __class__ cell) and the name of its first parameter, for the
        # statements' zero-argument super() (compile_statement).
        self.func_class = None
        self.self_name = None
        # True for a script frame (module:__main__), the script's namespace
        # for a function a script defined, else None (the module's globals).
        self.script_globals = None
        self.reached = set()  # ids applied or run without a panic in the last run
        self.panicked = {}  # id -> (message, trace) of the last run
        # id(object) -> [object, creator expression id or None, [(mutator id, stamp)]]
        # for mutable objects bound in this frame (see Runner._dirty_reads).
        self.mutlog = {}
        # Module state (Runner._module_state): (module, name) -> (module
        # dict, the value before the frame first rebound it), and the ids
        # of the statements that rebound module globals in the last run.
        self.gbase = {}
        self.gwriters = set()
        self.gforce = False  # the next pass resets the state (Runner.run)
        self.gnew = None  # index of the first statement that became a writer in this pass
        self.last_rerun = ()  # R of the last pass
        # Which statement is where (Runner._layout): a token that changes
        # when a statement id moves to another index.
        self.layout = object()
        self.layout_ids = None
        self.layout_plan = None
        self.layout_token = None
        # The value journal was asked for this frame's cache (it is asked
        # once, for a frame new to this kernel: engine_journal).
        self.journal_checked = False
        # id -> stamp of entries the journal found it cannot store (they do
        # not pickle, or are too large): not tried again while unchanged.
        self.journal_skip = {}
        self._forget_sync()

    def _forget_sync(self):
        """The incremental bookkeeping of the runs (Runner._sync), empty.

        An edit's run costs what changed, not the length of the function,
        by carrying these from one run of the frame to the next. They
        describe sync_plan, with the layout sync_layout, the parameter
        stamp sync_param and the module globals' versions sync_globals, as
        of the last Runner._sync; the changes since then are the plan's
        (Plan.parent, Plan.changed), the keys touched in cache and reported
        (TrackedDict), and the differences of those values. Only _sync and
        the run it serves update them; sync_plan None: nothing is known,
        the next run checks and visits every statement.

        - unverified: indices of the statements rerun_set's check found
          failing (no entry, another key, signature, a move) last time.
          Every other statement passed, and its check cannot change until
          one of its inputs does: its entry, its definers' entries, its
          PlanStmt, the parameter stamp, a global's version, an import.
        - dirty: indices the run loop must visit one by one. Every other
          statement is clean: it has an entry that returned nothing and
          unbinds nothing, and reported holds that entry's update with its
          range, so visiting it changes nothing but the namespace and
          reached (Runner._apply_clean).
        - blocks: per block of BLOCK statements (index // BLOCK), the merged
          bindings of their entries, or None; valid while none of their
          entries changes (an entry set or removed drops its block).
        - stale_keys: cache or reported may hold ids that are not the
          plan's (set by _sync when the ids changed or such a key was
          touched; cleared by the run that removed them).
        """
        self.sync_plan = None
        self.sync_layout = None
        self.sync_param = None
        self.sync_globals = {}
        self.unverified = set()
        self.dirty = set()
        self.blocks = []
        self.stale_keys = True

    def reset(self, pointer):
        self.pointer = pointer
        self.cache.clear()
        self.reported.clear()
        self.namespace = {}
        self.plan = None
        self.params = {}
        self.param_stamp = 0
        self.args_key = None
        self.code_qualname = None
        self.args_fresh = False
        self.func_class = None
        self.self_name = None
        self.mutlog = {}
        self.gbase = {}
        self.gwriters = set()
        self.gforce = False
        self.gnew = None
        self.last_rerun = ()
        self.layout = object()
        self.layout_ids = None
        self.layout_plan = None
        self.layout_token = None
        self.journal_checked = False
        self.journal_skip = {}
        self._forget_sync()


class _Return(BaseException):
    """Raised by RETURN_HOOK: the frame's function returns this value."""

    def __init__(self, value):
        self.value = value


class _Hooks:
    """Receives the value (and direct call) of the running statement."""

    __slots__ = ("value", "has", "call")

    def __init__(self):
        self.value = None
        self.has = False
        self.call = None

    def reset(self):
        self.value = None
        self.has = False
        self.call = None

    def value_hook(self, value):
        self.value = value
        self.has = True
        return value

    # CALLEE_HOOK(f)(*ARGS_HOOK(a, k=b), **KWARGS_HOOK()) (engine_analysis):
    # Python evaluates the callee, then the arguments, then calls.

    def callee_hook(self, func):
        self.call = (func, (), {})
        return func

    def args_hook(self, /, *args, **kwargs):
        self.call = (self.call[0], args, kwargs)
        return args

    def kwargs_hook(self):
        return self.call[2]

    @staticmethod
    def return_hook(value):
        raise _Return(value)


# Test frameworks' "this test does not apply" exceptions, by (module,
# qualname) of a class in the exception's MRO, so that neither unittest nor
# pytest is imported here. pytest gives Skipped the module "builtins" (its
# messages read "Skipped: ..."); XFailed (pytest.xfail()) keeps its own.
_SKIP_OUTCOMES = frozenset([
    ("unittest.case", "SkipTest"),
    ("builtins", "Skipped"),
    ("_pytest.outcomes", "Skipped"),
    ("_pytest.outcomes", "XFailed"),
])


def is_skip_outcome(exc):
    """Whether exc is a skip or xfail outcome (execute's stopAtSkip)."""
    return any((getattr(c, "__module__", None), getattr(c, "__qualname__", None)) in _SKIP_OUTCOMES for c in type(exc).__mro__)


class Runner:
    """Runs frames for one execute request."""

    def __init__(self, engine, emit, stop_at_skip=False, run_once=False):
        self.stop_at_skip = stop_at_skip  # execute's stopAtSkip (kernel/PROTOCOL.md)
        # execute's runOnce: no statement is cached (values, bindings,
        # mutation logs), so objects die when the code releases them.
        self.run_once = run_once
        self.engine = engine
        self.kernel = engine.kernel
        self.modules = engine.modules
        self.analyzer = engine.analyzer
        self.diagnostics = engine.diagnostics
        self.emit = emit
        self._gv_cache = {}

    # -- helpers -------------------------------------------------------------------

    def _global_version(self, module, name):
        key = (module, name)
        v = self._gv_cache.get(key)
        if v is None:
            v = self.modules.global_version(module, name)
            self._gv_cache[key] = v
        return v

    def _current_sig(self, plan, ps, frame):
        cache = frame.cache
        stmts = plan.stmts
        out = []
        for name, kind, ref in ps.deps:
            if kind == LOCAL:
                e = cache.get(stmts[ref].id)
                out.append(e.stamp if e is not None else None)
            elif kind == PARAM:
                out.append(frame.param_stamp)
            elif kind == IMPORT:
                out.append(tuple(self.modules.module_hash(m) for m in ref))
            else:
                out.append(self._global_version(plan.module, name))
        return tuple(out)

    def plan_for(self, frame, rec, qualname):
        src = rec.source
        plan = frame.plan
        if plan is not None and plan.generation == src.generation and plan.qualname == qualname and plan.module == rec.name:
            return plan
        if qualname == SCRIPT and frame.script_globals is True:
            reuse = plan if plan is not None and plan.module == rec.name and plan.qualname == SCRIPT else None
            plan = frame.plan = build_script_plan(self.analyzer, src, rec.name, self.modules, reuse)
            return plan
        func = find_function(src, qualname)
        if func is None:
            raise Failure("failure", "function %s:%s not found in module %s (%s)" % (rec.name, qualname, rec.name, rec.path))
        if isinstance(func, ast.AsyncFunctionDef):
            raise Failure("failure", "%s:%s is a coroutine function; ripple runs plain functions" % (rec.name, qualname))
        reuse = plan if plan is not None and plan.module == rec.name else None
        plan = build_plan(self.analyzer, src, rec.name, qualname, func, reuse)
        # A plan derived from frame.plan (which passed this check) can only
        # differ in its changed statements (and _update_plan refuses yields).
        for ps in plan.stmts if plan.changed is None else [plan.stmts[k] for k in plan.changed]:
            if ps.info.yields:
                raise Failure(
                    "failure",
                    "%s:%s is a generator or uses await (line %d); ripple runs plain functions"
                    % (rec.name, qualname, ps.node.lineno),
                )
        frame.plan = plan
        return plan

    # -- the rerun set --------------------------------------------------------------

    def rerun_set(self, plan, frame, module_dict=None):
        """(R, reaches_param): the statements to run again (see the module doc)."""
        cache = frame.cache
        stmts = plan.stmts
        rerun = set()
        layout = self._layout(frame, plan)
        moved = []
        # Only the statements whose check may have changed since the last
        # run are checked (Runner._sync); every other one passed then and
        # would pass now.
        candidates = self._sync(frame, plan, layout)
        for ps in stmts if candidates is None else [stmts[k] for k in candidates]:
            e = cache.get(ps.id)
            if e is None or e.key != ps.info.key or e.dep_names != ps.dep_names or e.sig != self._current_sig(plan, ps, frame):
                rerun.add(ps.index)
            elif e.layout is not layout and e.seen is not None:
                # Statements moved since it ran (an edit): the objects it
                # reads may now come to it through a different set of the
                # statements that mutate them through calls (they are not
                # definers, so the signature does not see it).
                if e.seen != self._seen_mutations(plan, frame, ps.index):
                    moved.append(ps.index)
                else:
                    e.layout = layout
        rerun.update(moved)
        # The check is done: what failed it is checked again next time.
        frame.unverified = set(rerun)
        frame.sync_plan = plan
        self._relied = {}
        self._deferred = {}  # index -> names its effects reach, decided when it runs
        self._soft = set(moved)  # members whose reason to run no signature records
        reaches_param = self._close(plan, frame, rerun, list(rerun), module_dict)
        # An alias was ruled out from a statement's cached value (_shares);
        # if that statement joined R since, its value may change: decide
        # again for the statements that relied on it.
        for _ in range(len(stmts)):
            redo = [i for i, ds in self._relied.items() if ds & rerun and i in rerun]
            if not redo:
                break
            for i in redo:
                del self._relied[i]
            before = len(rerun)
            reaches_param = self._close(plan, frame, rerun, redo, module_dict) or reaches_param
            if len(rerun) == before and not any(i in self._relied for i in redo):
                break
        added = self._module_state(plan, frame, rerun, module_dict)
        if added:
            self._soft.update(added)
            rerun |= added
            reaches_param = self._close(plan, frame, rerun, list(added), module_dict) or reaches_param
        return rerun, reaches_param

    def _sync(self, frame, plan, layout):
        """Fold the changes since the frame's last run into its incremental
        bookkeeping (Frame._forget_sync); returns the sorted indices of the
        statements whose check (rerun_set) may have changed, or None for
        all of them.

        The changes: statements the plan replaced (Plan.changed, when it
        derives from the last run's plan), cache entries set or removed
        (and so the signatures of the statements that read them), updates
        reported, the parameter stamp, module globals' versions, the
        versions of the modules a script imports (always checked). A new
        plan of other ids, a cleared cache, or nothing known: everything.
        """
        cache, reported = frame.cache, frame.reported
        stmts = plan.stmts
        n = len(stmts)
        base = frame.sync_plan
        # Not known again until the check is done (rerun_set): a check cut
        # short leaves everything to check next time.
        frame.sync_plan = None
        if base is plan:
            changed = ()
        elif base is not None and plan.parent == base.serial:
            changed = plan.changed
        else:
            changed = None
        if changed is None or cache.cleared or reported.cleared or frame.sync_layout is not layout:
            frame.dirty = set(range(n))
            frame.blocks = [None] * (n // BLOCK)
            frame.stale_keys = True
            candidates = None
        else:
            by_id = plan.by_id
            if not by_id.keys() >= cache.touched or not by_id.keys() >= reported.touched:
                frame.stale_keys = True
            touched = {by_id[k].index for k in cache.touched if k in by_id}
            shown = {by_id[k].index for k in reported.touched if k in by_id}
            dirty = frame.dirty
            dirty.update(touched, shown, changed)
            blocks = frame.blocks
            for k in touched.union(changed):
                if k // BLOCK < len(blocks):
                    blocks[k // BLOCK] = None
            candidates = frame.unverified
            candidates.update(touched, changed, plan.imports)
            rdeps = plan.rdeps
            for k in touched:
                candidates.update(rdeps[k])
        cache.touched.clear()
        cache.cleared = False
        reported.touched.clear()
        reported.cleared = False
        if frame.sync_param != frame.param_stamp:
            candidates = None
        frame.sync_param = frame.param_stamp
        frame.sync_layout = layout
        old = frame.sync_globals
        versions = {}
        for name, users in plan.users.items():
            v = versions[name] = self._global_version(plan.module, name)
            if candidates is not None and old.get(name, old) != v:
                candidates.update(users)
        frame.sync_globals = versions
        frame.unverified = set()
        return None if candidates is None else sorted(candidates)

    @staticmethod
    def _layout(frame, plan):
        """The frame's layout token: the same object while every statement
        id of the function stays at its index."""
        if frame.layout_plan is not plan:
            if plan.layout_token is not frame.layout_token:
                ids = tuple(plan.ids)
                if ids != frame.layout_ids:
                    frame.layout = object()
                    frame.layout_ids = ids
                frame.layout_token = plan.layout_token
            frame.layout_plan = plan
        return frame.layout

    @staticmethod
    def _seen_mutations(plan, frame, k):
        """The mutations (mutator id, stamp) that statements before k made to
        the objects k reads through its local names and parameters, and to
        the mutable objects directly inside them, as the mutation log has
        them.

        A statement that mutates an object through a call
        (``c = len(xs) + (add_to(xs, 7) or 8)``, ``m = 1 + xs.pop()``) is
        not a definer of the name, so a reader's signature does not record
        it; while statements keep their places, a reader after it runs
        again whenever it does (Runner._effects). An edit can move a
        cached reader across a cached mutator: deleting the first
        ``zs = h1(xs)`` hands the label zs, key and all, to the second
        ``zs = h1(xs)``, after ``m = len(xs) * 0 + xs.pop()`` (the
        invariant test's seed 7018), and the entry of the first, which saw
        xs before the pop, would be taken for it. The entry keeps this set
        as it was when it ran; after a move the set now must be the same.
        """
        mutlog = frame.mutlog
        by_id = plan.by_id
        out = set()
        if not mutlog:
            return frozenset()
        for _kind, obj in _read_objects(frame, plan.stmts, k):
            if _immutable(obj):
                continue
            for o in (obj, *_elements(obj)):
                log = mutlog.get(id(o))
                if log is None or log[0] is not o:
                    continue
                for mutation in log[2]:
                    m = by_id.get(mutation[0])
                    if m is not None and m.index < k:
                        out.add(mutation)
        return frozenset(out)

    def _close(self, plan, frame, rerun, work, module_dict):
        """Grow rerun to its fixed point from the members in work (the
        module doc's rules); returns whether a parameter was reached."""
        stmts = plan.stmts
        reaches_param = False
        rdeps = plan.rdeps
        everything = len(stmts)
        while work:
            i = work.pop()
            added = list(rdeps[i])
            live = ()
            if len(rerun) < everything:
                live = self._effects(plan, frame, i, module_dict, rerun)
            if live and self._never_ran(frame, stmts[i]):
                # It did not run last time (a Panic of a statement it
                # depends on): its effects were never applied, so no chain;
                # the statements after it that must see them join only if it
                # runs now (Runner._run_frame).
                self._deferred[i] = live
                live = ()
            if stmts[i].info.mutates or live:
                members, hit_param = self._chain(plan, frame, i, live)
                reaches_param = reaches_param or hit_param
                added += members
            if live:
                readers = self._readers_after(plan, i, live)
                self._soft.update(j for j in readers if j not in rerun)
                added += readers
            creators, dirty_param = self._dirty_reads(plan, frame, i, rerun)
            reaches_param = reaches_param or dirty_param
            added += creators
            for j in added:
                if j not in rerun:
                    rerun.add(j)
                    work.append(j)
        return reaches_param

    # -- module state (issue 13) ---------------------------------------------------
    #
    # A project function may rebind a module global (`global COUNT` in a
    # helper, or in a function nested in the body): module state that
    # statements change and read through calls. A fresh run starts from the
    # modules' own values, so when any statement that changes it runs again
    # (or one that may: a changed statement with a call), the state goes
    # back to what it was before the frame first changed it and every
    # statement from the first of them on that calls something or reads a
    # module global runs again, in order. Which globals can be rebound is
    # static (the names of `global` statements in a module's functions);
    # which statement rebound one is a run-time fact (Entry.gwrites).

    def _watched(self):
        """[(module name, module dict, names)] of loaded project modules
        whose functions declare globals; recomputed when a module changed."""
        table = self.modules
        key = table._generation
        cached = getattr(table, "_ripple_watched", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        out = []
        for rec in list(table.records.values()):
            src, module = rec.source, rec.module
            if src is None or module is None or "global" not in src.text:
                continue
            names = set()
            for node in ast.walk(src.tree):
                if isinstance(node, ast.Global):
                    names.update(node.names)
            if names:
                out.append((rec.name, module.__dict__, tuple(sorted(names))))
        table._ripple_watched = (key, out)
        return out

    def _module_state(self, plan, frame, rerun, module_dict):
        """Statements to add to rerun for module state; resets the state
        when they are needed."""
        if self.run_once:
            return ()
        watched = self._watched()
        if not watched and not frame.gbase:
            return ()
        stmts = plan.stmts
        cache = frame.cache
        start = None
        force, frame.gforce = frame.gforce, False
        writers = [plan.by_id[w].index for w in frame.gwriters if w in plan.by_id]
        if force and writers:
            start = min(writers)
        for wid in frame.gwriters:
            ps = plan.by_id.get(wid)
            e = cache.get(wid)
            if ps is not None and e is not None and e.key != ps.info.key:
                # The id names another statement now (a deleted `b = bump(a)`
                # hands its label to the next `b = ...`): where the writer
                # was is not known, so the state is redone from the top.
                ps = None
            if ps is None or e is None or not e.gwrites or ps.index in rerun:
                start = 0 if ps is None else (ps.index if start is None else min(start, ps.index))
        for (mod, name), (mdict, _) in frame.gbase.items():
            if not any(w[1] is mdict for w in watched):
                start = 0  # the module was loaded again: its state is fresh
                break
        if writers:
            # A statement to run before a writer must see the state as it
            # was before the writer, not as the last run left it.
            last = max(writers)
            for i in sorted(rerun):
                if i >= last or (start is not None and i >= start):
                    break
                if _reads_state(plan, stmts[i]):
                    start = i
                    break
        if start is None:
            return ()
        frame.gwriters = {w for w in frame.gwriters if w in plan.by_id}  # a deleted writer's effect is undone below
        if frame.gwriters or start == 0:
            first = min((plan.by_id[w].index for w in frame.gwriters if w in plan.by_id), default=start)
            start = min(start, first)
        for (mod, name), (mdict, value) in list(frame.gbase.items()):
            if any(w[1] is mdict for w in watched):
                if value is DELETED:
                    mdict.pop(name, None)
                else:
                    mdict[name] = value
            else:
                del frame.gbase[(mod, name)]
        added = set()
        for k in range(start, len(stmts)):
            ps = stmts[k]
            if k in rerun:
                continue
            if ps.id in frame.gwriters or _reads_state(plan, ps):
                added.add(k)
        return added

    def _state_snapshot(self, watched):
        return [mdict.get(name, DELETED) for _, mdict, names in watched for name in names]

    def _state_writes(self, frame, watched, before):
        """(module, name) of the watched globals changed since before."""
        out = []
        i = 0
        for mod, mdict, names in watched:
            for name in names:
                old = before[i]
                i += 1
                if mdict.get(name, DELETED) is not old:
                    out.append((mod, name))
                    if (mod, name) not in frame.gbase:
                        frame.gbase[(mod, name)] = (mdict, old)
        return tuple(out)

    # -- mutation through calls (issue 13) ----------------------------------------
    #
    # A statement may mutate objects through code it calls: an argument, a
    # method's receiver, a closure or generator it calls, an iterator it
    # consumes, the frame names a nested function it calls reads, and any
    # object one of those lives in (``row = grid[0]; row.append(1)`` changes
    # grid). Which of these can have an effect is decided from the values
    # the cache holds (run-time facts): an int passed to f, a list given to
    # len(), a list iterated, a function without a closure called are inert.
    # When a statement with a live effect runs again, the definition chain
    # of the object runs again (the effect is never applied twice) and so
    # does every later statement that reads the name (it must see the
    # effect), up to a statement that rebinds the name. A value the cache
    # does not know is taken as mutable: conservative first.

    @staticmethod
    def _never_ran(frame, ps):
        """Whether the statement got a propagated Panic last run (it did not
        run) and has no entry."""
        if ps.id in frame.cache:
            return False
        p = frame.panicked.get(ps.index)
        return p is not None and p[1] and p[1][0] != ps.id

    def _readonly_callee(self, func):
        """Whether every parameter of project function func is only ever a
        direct argument of a builtin that does not mutate it (list(p),
        len(p), sorted(p), ...), never rebound, stored, iterated, called,
        or reached by a nested function: then func cannot mutate what its
        arguments hold at the top level. Static facts of its source, cached
        per code object; False when unsure (not a project function, no
        source, a name of those builtins rebound in its module)."""
        code = func.__code__
        cache = self.engine.__dict__.setdefault("_ripple_readonly", {})
        got = cache.get(code)
        if got is not None:
            return got
        result = False
        try:
            src = self.modules.source_for_filename(code.co_filename)
            node = None
            if src is not None:
                for child in ast.walk(src.tree):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == code.co_name:
                        first = child.decorator_list[0].lineno if child.decorator_list else child.lineno
                        if first == code.co_firstlineno:
                            node = child
                            break
            if node is not None:
                result = _params_readonly(node, func.__globals__)
        except Exception:
            result = False
        if len(cache) > 10000:
            cache.clear()
        cache[code] = result
        return result

    def _definer(self, plan, name, at):
        """(kind, ref) of the statement defining name as statement `at` sees it."""
        stmts = plan.stmts
        got = stmts[at].dep_of.get(name)
        if got is not None:
            return got
        j = _last_before(plan.definers, name, at)
        if j >= 0:
            return (LOCAL, j)
        if name in plan.params:
            return (PARAM, None)
        return (GLOBAL, None)

    def _value(self, plan, frame, name, at, module_dict):
        """The value name has when statement `at` starts, as the cache knows
        it, or DELETED when unknown."""
        kind, ref = self._definer(plan, name, at)
        if kind == LOCAL:
            e = frame.cache.get(plan.stmts[ref].id)
            return DELETED if e is None else _binding(e, name)
        if kind == PARAM:
            return frame.params.get(name, DELETED)
        if module_dict is None:
            return DELETED
        value = module_dict.get(name, DELETED)
        if value is DELETED:
            value = getattr(builtins, name, DELETED)
        return value

    def _effects(self, plan, frame, i, module_dict, rerun=None):
        """The names whose objects statement i may mutate through code it
        calls and that can be mutated: a list of names (the aliases of the
        objects it mutates included)."""
        ps = plan.stmts[i]
        info = ps.info
        memo = {}

        def value(name):
            v = memo.get(name, memo)
            if v is memo:
                v = memo[name] = self._value(plan, frame, name, i, module_dict)
            return v

        live = set()
        for name, reason in info.maybe:
            if name in live:
                continue
            v = value(name)
            if v is DELETED or not _inert(reason, v, value, self._readonly_callee):
                live.add(name)
        # Code the statement may call (a nested def, a lambda) reads these
        # frame names when called; it may mutate their objects.
        for name, kind, ref in ps.deps:
            if kind == LOCAL and name not in live:
                carried = plan.carried[ref]
                if carried:
                    for extra in carried:
                        v = value(extra)
                        if v is DELETED or not _immutable(v):
                            live.add(extra)
        if not live and not info.mutates:
            return ()
        # The objects it mutates may live in others: follow where they came
        # from (the names their definers read whose values are mutable).
        todo = [(name, i) for name in live | info.mutates]
        seen = set()
        # An object the statement binds and mutates itself (`for row in
        # grid: row.append(1)`) comes from what it reads.
        relied = self._relied.setdefault(i, set()) if rerun is not None else set()
        own = frame.cache.get(ps.id) if rerun is not None and i not in rerun else None
        for name in (live | info.mutates) & info.binds:
            mine = _binding(own, name) if own is not None else DELETED
            for source in info.uses:
                if source != name and source not in live:
                    v = value(source)
                    if v is DELETED or not _immutable(v):
                        if mine is not DELETED and v is not DELETED and not _shares(mine, v):
                            relied.add(i)
                            continue
                        live.add(source)
                        todo.append((source, i))
        while todo:
            name, at = todo.pop()
            kind, ref = self._definer(plan, name, at)
            if kind != LOCAL or (name, ref) in seen or len(seen) > 256:
                continue
            seen.add((name, ref))
            d = plan.stmts[ref]
            if d.info.imports or isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            e = frame.cache.get(d.id)
            mine = DELETED
            if e is not None:
                v = _binding(e, name)
                if v is not DELETED and _immutable(v):
                    continue
                if rerun is not None and ref not in rerun:
                    mine = v  # what it bound last time, and will bind again
            for source in d.info.uses:
                if source == name and name not in d.info.binds:
                    continue
                v = self._value(plan, frame, source, ref, module_dict)
                if v is DELETED or not _immutable(v):
                    if mine is not DELETED and v is not DELETED and not _shares(mine, v):
                        # A run-time fact: the object the name holds is
                        # neither the source's nor inside it, nor does it
                        # hold anything the source holds (a copy, a new
                        # object computed from it): not an alias.
                        relied.add(ref)
                        continue
                    if source not in live:
                        live.add(source)
                    todo.append((source, ref))
        return tuple(sorted(live))

    @staticmethod
    def _readers_after(plan, i, names):
        """Statements after i that read (or may mutate) one of names, each
        up to the first statement that rebinds it."""
        stmts = plan.stmts
        out = []
        open_ = set(names)
        for k in range(i + 1, len(stmts)):
            if not open_:
                break
            info = stmts[k].info
            hit = open_ & info.uses
            if not hit:
                for name, _ in info.maybe:
                    if name in open_:
                        hit = True
                        break
            if hit:
                out.append(k)
            closed = [n for n in open_ & info.binds if not info.compound]
            for n in closed:
                open_.discard(n)
        return out

    def _chain(self, plan, frame, i, extra=()):
        """Definition chain of the names statement i mutates (5.3), and of
        the names extra its calls may mutate."""
        stmts = plan.stmts
        members = []
        hit_param = False
        seen = set()
        todo = [(name, i) for name in stmts[i].info.mutates]
        todo += [(name, i) for name in extra]
        while todo:
            name, at = todo.pop()
            kind, ref = self._definer(plan, name, at) if at == i else stmts[at].dep_of.get(name, (GLOBAL, None))
            if kind == PARAM:
                hit_param = True
                continue
            if kind != LOCAL or ref in seen:
                continue
            seen.add(ref)
            members.append(ref)
            info = stmts[ref].info
            if name in info.mutates or (info.compound and name in info.defines) or name not in info.binds:
                todo.append((name, ref))
        return members, hit_param

    def _dirty_reads(self, plan, frame, k, rerun):
        """Creators of objects statement k would read in a state k must not see.

        An object read by k is clean when every mutation logged on it came
        from a statement before k that is cached with that very stamp and is
        not re-running. Otherwise (a later statement mutated it in an earlier
        run, a mutating statement was deleted, changed, panicked or was
        interrupted) the statement that created it must run again.
        Returns (statement indices, whether a parameter object is dirty).
        """
        cache = frame.cache
        mutlog = frame.mutlog
        out = []
        dirty_param = False
        for kind, obj in _read_objects(frame, plan.stmts, k):
            # The object and what it directly holds: k may read an element
            # (grid[1]) that a later statement mutated through an alias
            # (ys = grid[1]; ys += [3]) while the container itself was
            # never mutated. Elements are logged with their container's
            # creator (_register_objects), so they name it.
            for o in (obj, *_elements(obj)):
                log = mutlog.get(id(o))
                if log is None or log[0] is not o or not log[2]:
                    continue
                for mutator_id, stamp in log[2]:
                    m = plan.by_id.get(mutator_id)
                    if m is None or m.index >= k or m.index in rerun:
                        break
                    me = cache.get(mutator_id)
                    if me is None or me.stamp != stamp:
                        break
                else:
                    continue
                creator = plan.by_id.get(log[1]) if log[1] is not None else None
                if creator is not None:
                    out.append(creator.index)
                elif log[1] is None and kind == PARAM:
                    dirty_param = True
        return out, dirty_param

    # -- running ------------------------------------------------------------------------

    def run(self, frame, depth, rec, qualname, top, wanted, visualizations):
        """Run one frame. Returns nothing; raises Failure or KeyboardInterrupt.

        * A full run must leave every live object of the frame as a fresh
          run would: carrying only mutations that this run applied (ran, or
          kept from the cache by a statement it reached). A mutation made
          earlier by a statement that was since deleted, changed or is no
          longer reached (a return now comes first) stays on the object, and
          a LocalCall entered with it, or a visualization, would see it. The
          creators of such objects lose their entries and the frame runs
          once more: they, their dependents and the mutators still there
          make fresh objects (a second pass only ever finds this pass's own
          mutations, so it ends).
        """
        for _ in range(3):
            first_stamp = self.engine.next_stamp()
            frame.gnew = None
            self._run_pass(frame, depth, rec, qualname, top, wanted, visualizations)
            if wanted is not None:
                return  # a partial run reaches only what it wants
            stale = self._stale_creators(frame, first_stamp)
            if frame.gnew is not None and self._stale_state_reads(frame):
                # A statement rebound module state for the first time, and a
                # later one that may read it came from the cache: run again
                # from the state before the first writer.
                frame.gforce = True
                continue
            if not stale:
                return
            for creator in stale:
                frame.cache.pop(creator, None)

    @staticmethod
    def _stale_state_reads(frame):
        plan = frame.plan
        if plan is None:
            return False
        for k in range(frame.gnew + 1, len(plan.stmts)):
            ps = plan.stmts[k]
            if k not in frame.last_rerun and ps.id in frame.reached and _reads_state(plan, ps):
                return True
        return False

    @staticmethod
    def _stale_creators(frame, first_stamp):
        """Creators of live objects carrying a mutation this run did not apply."""
        cache, reached = frame.cache, frame.reached
        out = set()
        for obj, creator, mutations in frame.mutlog.values():
            if creator is None or not mutations:
                continue
            # The mutations first: most objects carry only mutations of
            # statements still cached as they made them (the cheap test).
            for mutator, stamp in mutations:
                if stamp > first_stamp:
                    continue  # made by this run
                m = cache.get(mutator)
                if m is None or m.stamp != stamp or mutator not in reached:
                    break
            else:
                continue
            if creator in out or creator not in reached:
                continue
            entry = cache.get(creator)
            if entry is None or not any(value is obj or any(x is obj for x in _elements(value)) for _, value in entry.bindings):
                # Not the creator's current object, nor directly inside it
                # (grid's row, _register_objects): nothing holds it.
                continue
            out.add(creator)
        return out

    def _run_pass(self, frame, depth, rec, qualname, top, wanted, visualizations):
        plan = self.plan_for(frame, rec, qualname)
        script = frame.script_globals
        if script is True:
            # A script's globals: a namespace of its own, made afresh for
            # each pass (names a statement adds with globals()[...] do not
            # outlive the run), as `python main.py` would give it.
            module_dict = {"__name__": "__main__", "__file__": rec.filename, "__doc__": None,
                           "__builtins__": builtins, "__package__": None, "__spec__": None}
            argv = sys.argv
            sys.argv = [rec.filename] + argv[1:]
            try:
                return self._run_frame(frame, depth, plan, rec, module_dict, top, wanted, visualizations)
            finally:
                sys.argv = argv
        module_dict = script if script is not None else rec.module.__dict__
        return self._run_frame(frame, depth, plan, rec, module_dict, top, wanted, visualizations)

    def _run_frame(self, frame, depth, plan, rec, module_dict, top, wanted, visualizations):
        rerun, reaches_param = self.rerun_set(plan, frame, module_dict)
        fresh, frame.args_fresh = frame.args_fresh, False
        if reaches_param and not fresh and frame.args_key is not None and self.engine.refresh_arguments(frame, rec):
            rerun, _ = self.rerun_set(plan, frame, module_dict)
        # A statement in R for a reason its signature does not record (a
        # live effect of another statement, module state) loses its entry
        # now: if the run ends before it (an interrupt, a partial run, a
        # return), the next run still runs it. The others keep theirs: the
        # reason they are in R is still there next run (module doc).
        for i in self._soft & rerun:
            frame.cache.pop(stmts_id(plan, i), None)
        frame.last_rerun = rerun
        stmts = plan.stmts
        order = range(len(stmts))
        if wanted is not None:
            needed = set()
            work = [plan.by_id[w].index for w in wanted if w in plan.by_id]
            while work:
                i = work.pop()
                if i in needed:
                    continue
                needed.add(i)
                work.extend(stmts[i].local_deps)
            rerun &= needed
            order = sorted(needed)
        vis_by_id = {}
        for vis in visualizations or ():
            vis_by_id.setdefault(vis["expressionId"], []).append(vis)

        # Namespace: same dict as last run, refilled (see the module doc).
        ns = frame.namespace
        ns.clear()
        ns.update(module_dict)
        declared = self._declared(frame, plan)
        for name in plan.bound.intersection(ns):
            if name not in declared:  # a `global` name is the module's
                del ns[name]
        ns.update(frame.params)
        hooks = _Hooks()
        if frame.func_class is not None:
            ns["__class__"] = frame.func_class
        ns[analysis.VALUE_HOOK] = hooks.value_hook
        ns[analysis.CALLEE_HOOK] = hooks.callee_hook
        ns[analysis.ARGS_HOOK] = hooks.args_hook
        ns[analysis.KWARGS_HOOK] = hooks.kwargs_hook
        ns[analysis.RETURN_HOOK] = hooks.return_hook

        reported = frame.reported
        pending = []
        for i in sorted(rerun):
            ps = stmts[i]
            pending.append(_update(ps, {"type": "Pending"}))
            reported[ps.id] = PENDING
        if pending:
            self.emit({"type": "updates", "depth": depth, "updates": pending})

        frame.reached = reached = set()
        frame.panicked = panics = {}
        returned = False
        frame_names = {plan.filename: plan.qualname}
        stopped = False
        # Updates of cached statements go out together, in one event, before
        # anything else is sent: a frame restored from the value journal
        # sends a thousand of them at once (engine_journal).
        batch = []

        def flush():
            if batch:
                self.emit({"type": "updates", "depth": depth, "updates": batch[:]})
                batch.clear()

        # The statements visited one by one, in order: those of R, those
        # with a visualization, and the dirty ones (Frame._forget_sync). A
        # full run applies the clean statements between them in bulk
        # (_apply_clean): for them a visit would change nothing else. A
        # partial run visits exactly what it wants.
        dirty = frame.dirty
        n = len(stmts)
        if wanted is None:
            visits = set(rerun)
            visits.update(dirty)
            for vis_id in vis_by_id:
                vps = plan.by_id.get(vis_id)
                if vps is not None:
                    visits.add(vps.index)
            todo = sorted(visits)
        else:
            todo = list(order)
            visits = set(todo)
        pos = 0
        prev = -1
        rest = ()  # the statements after a return, each to report not reached
        while True:
            i = todo[pos] if pos < len(todo) else n
            if wanted is None and i > prev + 1:
                self._apply_clean(frame, plan, ns, reached, prev + 1, i)
            if i >= n:
                break
            pos += 1
            prev = i
            ps = stmts[i]
            if i not in rerun:
                e = frame.cache[ps.id]
                for name, value in e.bindings:
                    if value is DELETED:
                        ns.pop(name, None)
                    else:
                        ns[name] = value
                reached.add(ps.id)
                last = reported.get(ps.id)
                if last is not e.update or e.update.get("range") != ps.range:
                    e.update["range"] = ps.range
                    cached = dict(e.update)
                    cached["fromCache"] = True
                    reported[ps.id] = e.update
                    batch.append(cached)
                if e.returned or e.deletes:
                    dirty.add(i)
                else:
                    dirty.discard(i)
                if top and ps.id in vis_by_id:
                    flush()
                    self._visualize(vis_by_id[ps.id], e.value, ns, module_dict, plan, fresh=False)
                if e.returned:
                    returned = True
                    rest = range(i + 1, n) if wanted is None else todo[pos:]
                    break
                continue
            dirty.add(i)
            origins = []
            for j in ps.local_deps:
                p = panics.get(j)
                if p is not None:
                    for origin in p[1]:
                        if origin not in origins:
                            origins.append(origin)
            if origins:
                frame.cache.pop(ps.id, None)
                first = plan.by_id[origins[0]].index
                message = panics[first][0]
                panics[i] = (message, origins)
                update = _update(ps, {"type": "Panic", "message": message, "trace": origins})
                reported[ps.id] = update
                flush()
                self.emit({"type": "updates", "depth": depth, "updates": [update]})
                continue
            flush()
            returned = self._run_statement(frame, plan, ps, depth, ns, hooks, frame_names, panics, top, vis_by_id, module_dict)
            if ps.index not in panics:
                reached.add(ps.id)
            deferred = self._deferred.get(i)
            if deferred and ps.index not in panics:
                # It ran after all: what comes after and sees its effects
                # runs too (rerun_set's deferred effects).
                for j in self._readers_after(plan, i, deferred):
                    if j not in rerun and (wanted is None or j in order):
                        rerun.add(j)
                        frame.cache.pop(stmts[j].id, None)
                        if j not in visits:
                            visits.add(j)
                            bisect.insort(todo, j, pos)
            if self.kernel.stop_requested():
                # An edit asked the run to end at a statement boundary
                # (kernel/PROTOCOL.md): this statement's value is cached;
                # the frame's bookkeeping below is done as after a whole
                # run, then the run ends; the run that follows the edit
                # goes on from here.
                stopped = True
                break
            if returned:
                rest = range(i + 1, n) if wanted is None else todo[pos:]
                break
        for k in rest:
            # Sent again when the statement moved: the client's range
            # of a not-reached statement must follow edits too.
            ps = stmts[k]
            dirty.add(k)
            if reported.get(ps.id) != (NOT_REACHED, ps.range):
                reported[ps.id] = (NOT_REACHED, ps.range)
                flush()
                self.emit({"type": "updates", "depth": depth, "updates": [_update(ps, {"type": "Pending", "message": "not reached"})]})
        flush()
        if frame.stale_keys:
            for stale in frame.cache.keys() - plan.by_id.keys():
                del frame.cache[stale]
            for stale in reported.keys() - plan.by_id.keys():
                del reported[stale]
            frame.stale_keys = False
        # A block merged from an entry this run replaced or removed lets go
        # of its values now, not at the next run (a large object would
        # live on); touched stays for the next _sync.
        blocks = frame.blocks
        if blocks:
            by_id = plan.by_id
            for key in frame.cache.touched:
                tps = by_id.get(key)
                if tps is not None and tps.index // BLOCK < len(blocks):
                    blocks[tps.index // BLOCK] = None
        self._prune_mutlog(frame)
        for vis_id, items in vis_by_id.items():
            if vis_id not in plan.by_id and top:
                for vis in items:
                    if vis.get("apply") or vis.get("oneshot"):
                        self._vis_failed(vis, "expression %s is not a statement of %s:%s" % (vis_id, plan.module, plan.qualname))
        if stopped:
            raise Failure("stopped", "stopped at a statement boundary by an edit")

    @staticmethod
    def _apply_clean(frame, plan, ns, reached, a, b):
        """Visit the clean statements a..b-1 (Frame._forget_sync) in bulk:
        their bindings into the namespace, in order, and their ids into
        reached; a whole block at a time where one fits (Frame.blocks)."""
        cache = frame.cache
        ids = plan.ids
        blocks = frame.blocks
        k = a
        while k < b:
            if k % BLOCK == 0 and k + BLOCK <= b:
                merged = blocks[k // BLOCK]
                if merged is None:
                    merged = {}
                    for e in map(cache.__getitem__, ids[k:k + BLOCK]):
                        merged.update(e.bindings)
                    blocks[k // BLOCK] = merged
                ns.update(merged)
                k += BLOCK
            else:
                ns.update(cache[ids[k]].bindings)
                k += 1
        reached.update(ids[a:b])

    def _run_statement(self, frame, plan, ps, depth, ns, hooks, frame_names, panics, top, vis_by_id, module_dict):
        """Run one statement of R; returns whether it returned from the frame."""
        info = ps.info
        frame.cache.pop(ps.id, None)  # no stale entry survives an interrupt or a panic
        sig = self._current_sig(plan, ps, frame)
        seen = None if self.run_once else self._seen_mutations(plan, frame, ps.index)
        stamp = self.engine.next_stamp()
        hooks.reset()
        returned = False
        mutated = [ns[n] for n in info.mutates if n in ns and not _immutable(ns[n])]
        if info.mutates & info.binds and not self.run_once:
            # It binds what it mutates (`for row in grid: row.append(1)`):
            # the objects it mutates come from what it reads; log them all,
            # and what they directly hold.
            for source in info.uses - info.binds:
                v = ns.get(source, DELETED)
                if v is not DELETED and not _immutable(v):
                    mutated.append(v)
                    mutated.extend(_elements(v))
        if info.maybe:
            # Objects its calls may mutate, as the values at hand say
            # (Runner._effects): their mutation log names it too.
            def value_of(name):
                v = ns.get(name, DELETED)
                return getattr(builtins, name, DELETED) if v is DELETED else v
            for name, reason in info.maybe:
                v = ns.get(name, DELETED)
                if v is not DELETED and not _immutable(v) and not _inert(reason, v, value_of, self._readonly_callee):
                    if not any(v is m for m in mutated):
                        mutated.append(v)
        # The statement reads module globals as they are now: a function it
        # or an earlier statement called may have rebound one since the
        # namespace was filled.
        for name, kind, _ in ps.deps:
            # A name the function binds is its local (read before its
            # binding, it is unbound, as in Python), unless declared global.
            if kind == GLOBAL and (name not in plan.bound or name in self._declared(frame, plan)):
                value = module_dict.get(name, DELETED)
                if value is not DELETED and ns.get(name, DELETED) is not value:
                    ns[name] = value
        # The names written as module globals (the body's `global`, nested
        # functions' too) start as the module has them: a helper may have
        # rebound one since; after the statement, only what it wrote goes
        # back (_write_globals), never a stale copy over the helper's.
        watched = self._watched() if not self.run_once else ()
        state = self._state_snapshot(watched) if watched else None
        gwrites = ()
        declared = self._declared(frame, plan)
        before = None
        if declared:
            before = {}
            for name in declared:
                value = module_dict.get(name, DELETED)
                if value is DELETED:
                    ns.pop(name, None)
                else:
                    ns[name] = value
                before[name] = value
        size = len(ns)
        started = time.perf_counter_ns()
        try:
            self_name = frame.self_name if frame.func_class is not None and "super" in ps.text else None
            code = self.analyzer.code(plan.filename, ps.text, ps.node, plan.flags, self_name, plan.qualname.rpartition(".")[2])
            self.engine.set_expression(ps.id)
            with self.kernel.user_code():
                started = time.perf_counter_ns()
                try:
                    exec(code, ns)
                except _Return as ret:
                    returned = True
                    hooks.value = ret.value
                    hooks.has = True
                finally:
                    # Logged even when it raised or was interrupted: its
                    # partial effects make the objects dirty.
                    if not self.run_once:
                        self._log_mutations(frame, mutated, ps.id, stamp)
                    self._write_globals(frame, plan, ps.text, ns, module_dict, size, before)
                    if state is not None:
                        gwrites = self._state_writes(frame, watched, state)
                        if gwrites:
                            if ps.id not in frame.gwriters:
                                frame.gwriters.add(ps.id)
                                if frame.gnew is None or ps.index < frame.gnew:
                                    frame.gnew = ps.index
                        else:
                            frame.gwriters.discard(ps.id)
                elapsed = time.perf_counter_ns() - started
                if ps.deps and ps.deps[-1][1] == IMPORT:
                    # The versions of the modules it has just imported
                    # (unloaded before it ran the first time).
                    sig = self._current_sig(plan, ps, frame)
                if hooks.has:
                    value = hooks.value
                elif isinstance(ps.node, ast.AugAssign) and isinstance(ps.node.target, ast.Name):
                    value = ns.get(ps.node.target.id)
                else:
                    value = None
                preview = values.preview(value)
                type_name = values.type_name(value)
                mimes = values.mime_types(value)
        except KeyboardInterrupt:
            forget_broken_imports()
            raise
        except BaseException as exc:  # a Panic of this statement
            elapsed = time.perf_counter_ns() - started
            forget_broken_imports()
            message = values.exception_message(exc)
            trace = [ps.id]
            panics[ps.index] = (message, trace)
            diag = self.diagnostics.for_exception(
                exc, location=ps.range, path=plan.path, expression_id=ps.id, frame_names=frame_names
            )
            self.kernel.flush_output()
            self.engine.set_expression(None)
            self.emit({"type": "diagnostic", "diagnostic": diag})
            update = _update(ps, {"type": "Panic", "message": message, "trace": trace}, elapsed)
            frame.reported[ps.id] = update
            if not self.run_once:
                self._register_objects(frame, ns, info, ps.id)
            self.emit({"type": "updates", "depth": depth, "updates": [update]})
            # A skip or xfail outcome ends the test here, as a return would.
            return self.stop_at_skip and is_skip_outcome(exc)
        bindings = tuple((name, ns.get(name, DELETED)) for name in ps.defines)
        if not self.run_once:
            self._register_objects(frame, ns, info, ps.id)
        payload = {"type": "Value", "preview": preview}
        if mimes:
            payload["mimeTypes"] = list(mimes)
        update = _update(ps, payload, elapsed)
        update["type"] = type_name
        call = hooks.call
        if call is not None:
            pointer = self.engine.method_pointer(call[0])
            if pointer is not None:
                update["methodCall"] = {"methodPointer": pointer}
            else:
                call = None
        entry = Entry(info.key, ps.dep_names, sig, stamp, bindings, update, value, returned, call, gwrites,
                      seen, frame.layout)
        if not self.run_once:
            frame.cache[ps.id] = entry
        frame.reported[ps.id] = update
        self.kernel.flush_output()
        self.engine.set_expression(None)
        self.emit({"type": "updates", "depth": depth, "updates": [update]})
        if top and ps.id in vis_by_id:
            self._visualize(vis_by_id[ps.id], value, ns, module_dict, plan, fresh=True)
        return returned

    @staticmethod
    def _declared(frame, plan):
        """_declared_globals of the frame's plan, computed once per plan
        (or passed on by _update_plan)."""
        declared = plan.declared
        if declared is None:
            declared = plan.declared = _declared_globals(plan)
        return declared

    def _write_globals(self, frame, plan, text, ns, module_dict, size, before):
        """Carry a statement's writes of module globals to the module, as
        the function's own code would make them: the names the function
        declares `global`, and names it added with globals()[...] (any new
        name of the namespace that is not the function's, looked for only
        after a statement that says globals: the scan is of the whole
        namespace)."""
        for name, old in (before or {}).items():
            value = ns.get(name, DELETED)
            if value is old:
                # Not written by the statement: take what the module has now
                # (a function it called may have rebound it there).
                current = module_dict.get(name, DELETED)
                if current is DELETED:
                    ns.pop(name, None)
                else:
                    ns[name] = current
            elif value is DELETED:
                module_dict.pop(name, None)
            else:
                module_dict[name] = value
        if len(ns) > size and "globals" in text:
            for name in [n for n in ns if n not in module_dict and n not in plan.bound and n not in frame.params
                         and not n.startswith("__ripple_") and n != "__class__"]:
                module_dict[name] = ns[name]

    @staticmethod
    def _log_mutations(frame, objects, expression_id, stamp):
        mutlog = frame.mutlog
        for obj in objects:
            log = mutlog.get(id(obj))
            if log is None or log[0] is not obj:
                log = mutlog[id(obj)] = [obj, None, []]
            log[2].append((expression_id, stamp))

    @staticmethod
    def _register_objects(frame, ns, info, expression_id):
        """Note the statement as creator of the new mutable objects it bound,
        and of the mutable objects directly inside them (grid's rows: a
        name bound to one later, row = grid[0], is not its creator)."""
        mutlog = frame.mutlog
        for name in info.defines:
            obj = ns.get(name, DELETED)
            if obj is DELETED or _immutable(obj):
                continue
            log = mutlog.get(id(obj))
            if log is None or log[0] is not obj:
                mutlog[id(obj)] = [obj, expression_id, []]
                for inner in _elements(obj):
                    log = mutlog.get(id(inner))
                    if log is None or log[0] is not inner:
                        mutlog[id(inner)] = [inner, expression_id, []]

    @staticmethod
    def _prune_mutlog(frame):
        """Forget logs of objects no cached binding or parameter holds."""
        if len(frame.mutlog) <= 2 * len(frame.cache) + 64:
            return
        live = set()
        for e in frame.cache.values():
            for _, obj in e.bindings:
                live.add(id(obj))
                for inner in _elements(obj):  # registered with their container's creator
                    live.add(id(inner))
        for obj in frame.params.values():
            live.add(id(obj))
        mutlog = frame.mutlog
        for key in [k for k in mutlog if k not in live]:
            del mutlog[key]

    # -- visualizations -------------------------------------------------------------

    def _visualize(self, items, value, ns, module_dict, plan, fresh):
        for vis in items:
            if vis.get("oneshot"):
                self._oneshot(vis, ns, plan)
            elif fresh or vis.get("apply"):
                self._apply(vis, value, module_dict, plan)

    def _vis_failed(self, vis, message, diagnostic=None):
        event = {
            "type": "visualizationFailed",
            "visualizationId": vis["visualizationId"],
            "expressionId": vis["expressionId"],
            "message": message,
        }
        if diagnostic is not None:
            event["diagnostic"] = diagnostic
        self.emit(event)

    def _apply(self, vis, value, module_dict, plan):
        if vis["expression"].strip() == values.DISPLAY_VISUALIZATION:
            self._deliver(vis, lambda: values.mime_bundle(value), values.DISPLAY_LIMIT)
            return

        def compute():
            func = self.engine.visualization_callable(vis["expression"], module_dict)
            args = [
                eval(analysis.compile_expression(src, "<visualization argument>"), module_dict)
                for src in vis.get("positionalArgumentsExpressions") or ()
            ]
            return func(value, *args)

        self._deliver(vis, compute)

    def _oneshot(self, vis, ns, plan):
        self._deliver(vis, lambda: eval(analysis.compile_expression(vis["expression"], "<executeExpression>"), ns))

    def _deliver(self, vis, compute, limit=values.VISUALIZATION_LIMIT):
        """Run compute (user code) and send its encoded result as the
        visualization's data, or visualizationFailed if it raises or the
        result cannot be encoded."""
        try:
            with self.kernel.user_code():
                data, error = values.encode_visualization(compute(), limit)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            self._vis_failed(vis, values.exception_message(exc), self.diagnostics.for_exception(exc))
            return
        if error is not None:
            self._vis_failed(vis, error)
            return
        self.emit({"type": "visualization", "visualizationId": vis["visualizationId"], "expressionId": vis["expressionId"], "data": data})


def forget_broken_imports():
    """Drop the modules a failed or interrupted import left half done.

    An import cut short (an interrupt in the middle of ``import pandas``, an
    error in one of its submodules) loses the module it was loading, as
    importlib removes it, but keeps the submodules that had finished: the
    next ``import pandas`` runs the package again, finds them in
    sys.modules, never binds them on the new package object, and fails
    with "partially initialized module 'pandas' has no attribute 'core'".
    The kernel would stay broken until it restarts. Called after a
    statement raised or was interrupted (rare, so the scan is affordable):
    a submodule whose parent package is gone from sys.modules, and a
    module still marked initializing, are dropped, so the next import
    starts clean, as in a fresh interpreter.
    """
    modules = sys.modules
    broken = []
    for name, module in list(modules.items()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and getattr(spec, "_initializing", False):
            broken.append(name)
            continue
        parent = name.rpartition(".")[0]
        while parent:
            if parent not in modules:
                broken.append(name)
                break
            parent = parent.rpartition(".")[0]
    for name in broken:
        modules.pop(name, None)
    return broken


def _shares(a, b, limit=1000):
    """Whether object a is b, lives inside b, or holds a mutable object that
    b holds (two levels deep into plain containers and instance
    dictionaries); True when it cannot tell (another kind of object, a
    container too large to look through): conservative."""
    seen = {}

    def children(x):
        t = type(x)
        if t in (list, tuple, set, frozenset):
            return x if len(x) <= limit else None
        if t is dict:
            return list(x.values()) + list(x.keys()) if len(x) <= limit else None
        if t in _PLAIN:
            return ()
        d = getattr(x, "__dict__", None)
        if type(d) is dict and t.__module__ != "builtins" and not isinstance(x, type):
            return list(d.values()) if len(d) <= limit else None
        return None  # iterators, generators, arrays, frames...: cannot see inside

    # The mutable objects b holds, two levels deep.
    level = [b]
    for depth in range(3):
        nxt = []
        for x in level:
            if _immutable(x) and type(x) not in (tuple, frozenset):
                continue
            if id(x) in seen:
                continue
            seen[id(x)] = x
            if depth < 2:
                kids = children(x)
                if kids is None:
                    return True
                nxt.extend(kids)
        level = nxt
    level = [a]
    for depth in range(3):
        nxt = []
        for x in level:
            if _immutable(x) and type(x) not in (tuple, frozenset):
                continue
            if id(x) in seen and seen[id(x)] is x and type(x) not in (tuple, frozenset):
                return True
            if depth < 2:
                kids = children(x)
                if kids is None:
                    return True
                nxt.extend(kids)
        level = nxt
    return False


def _reads_state(plan, ps):
    """Whether the statement may read module state: it calls something or
    reads a module global (a name the body never binds, also when an
    earlier statement is taken to mutate it: `helpers.h0(a)`)."""
    if ps.info.maybe:
        return True
    bound = plan.bound
    return any(kind == GLOBAL or name not in bound for name, kind, _ in ps.deps)


def stmts_id(plan, i):
    return plan.stmts[i].id


# Builtins that do not mutate their arguments (they may consume an iterator).
_PURE_BUILTINS = frozenset(
    getattr(builtins, n) for n in (
        "len sum min max sorted list tuple set frozenset dict str repr int float complex bool abs round "
        "isinstance issubclass hasattr getattr print format hash id type range enumerate zip reversed map "
        "filter any all divmod pow chr ord hex bin oct callable iter ascii bytes bytearray slice"
    ).split()
)
# Methods of builtin types that do not mutate their receiver.
_PURE_METHODS = {
    list: frozenset("count index copy".split()),
    dict: frozenset("get keys values items copy".split()),
    set: frozenset("copy union intersection difference symmetric_difference issubset issuperset isdisjoint".split()),
    bytearray: frozenset("count find index decode hex startswith endswith".split()),
}
_PLAIN = frozenset([list, dict, set, frozenset, tuple, str, bytes, bytearray, int, float, complex, bool, range, type(None)])


def _stateless_callable(v):
    """Calling v cannot change state the frame holds through v: a function
    without a closure (a frame's nested def reads the frame's names, which
    the plan follows), a builtin function of a module, a class."""
    t = type(v)
    if t is types.FunctionType:
        return not v.__closure__
    if t is types.BuiltinFunctionType:
        owner = getattr(v, "__self__", None)
        return owner is None or type(owner) is types.ModuleType
    return t is type


_PURE_NAMES = frozenset(f.__name__ for f in _PURE_BUILTINS if hasattr(f, "__name__"))


def _params_readonly(node, module_globals):
    """See Runner._readonly_callee; node is the function's def."""
    params = set(analysis.parameter_names(node.args))
    if not params:
        return True
    local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    parents = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and child is not node:
            # A nested scope may keep a parameter (a closure): only when it
            # never names one.
            if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(child)):
                return False
        if isinstance(child, (ast.Global, ast.Nonlocal)) and params & set(child.names):
            return False
        if not isinstance(child, ast.Name) or child.id not in params:
            continue
        if not isinstance(child.ctx, ast.Load):
            return False  # rebound or deleted
        call = parents.get(child)
        if not (isinstance(call, ast.Call) and child in call.args and isinstance(call.func, ast.Name)):
            return False
        name = call.func.id
        if name not in _PURE_NAMES or name in params or name in local:
            return False
        bound = module_globals.get(name, getattr(builtins, name, None))
        if bound is not getattr(builtins, name, None):
            return False  # the module rebinds the builtin's name
    return True


def _elements(v, limit=1000):
    """The mutable objects directly inside a plain container (none for
    anything else or a container larger than limit)."""
    t = type(v)
    if t in (list, tuple, set, frozenset) and len(v) <= limit:
        return [x for x in v if not _immutable(x)]
    if t is dict and len(v) <= limit:
        return [x for x in v.values() if not _immutable(x)]
    return []


def _flat(v, limit=1000):
    """A plain container of immutable values (a list of ints, a dict of
    strings to numbers): nothing in it can be mutated but itself."""
    t = type(v)
    if t in (list, tuple, set, frozenset):
        return len(v) <= limit and all(_immutable(x) for x in v)
    if t is dict:
        return len(v) <= limit and all(_immutable(k) and _immutable(x) for k, x in v.items())
    return False


def _inert(reason, v, value_of, readonly_callee=None):
    """Whether what a statement does to v for reason (StmtInfo.maybe)
    cannot mutate it. value_of(name) gives another name's value;
    readonly_callee(f) whether project function f only reads its
    parameters (Runner._readonly_callee)."""
    kind, detail = reason
    if kind == analysis.MAYBE_CALLEE:
        return _stateless_callable(v) or (_immutable(v) and type(v) not in (types.FunctionType, types.MethodType))
    if kind == analysis.MAYBE_ITER:
        return type(v) in _PLAIN
    if kind == analysis.MAYBE_METHOD:
        if _immutable(v) and type(v) is not types.MethodType:
            return True
        pure = _PURE_METHODS.get(type(v))
        return pure is not None and detail in pure
    # An argument.
    if type(v) in _PLAIN and detail is not None:
        callee = value_of(detail)
        try:
            if callee in _PURE_BUILTINS:
                return True
        except TypeError:  # an unhashable callee
            pass
        # A project function that only hands its parameters to builtins
        # that do not mutate them (h(xs): ys = list(xs)) cannot mutate a
        # flat container: it can reach nothing else in it.
        if readonly_callee is not None and type(callee) is types.FunctionType and _flat(v) and readonly_callee(callee):
            return True
    if type(v) is types.FunctionType or type(v) is types.MethodType:
        return _stateless_callable(v) if type(v) is types.FunctionType else False
    return _immutable(v)


def _read_objects(frame, stmts, k):
    """(kind, object) of what statement k reads through its local and
    parameter dependencies, as the frame holds them now: a local's value
    in its definer's cache entry, a parameter's in the frame (deleted
    names and definers without an entry left out)."""
    cache = frame.cache
    for name, kind, ref in stmts[k].deps:
        if kind == LOCAL:
            e = cache.get(stmts[ref].id)
            if e is None:
                continue
            obj = _binding(e, name)
        elif kind == PARAM:
            obj = frame.params.get(name, DELETED)
        else:
            continue
        if obj is not DELETED:
            yield kind, obj


def _binding(entry, name):
    for bound, value in entry.bindings:
        if bound == name:
            return value
    return DELETED


def _update(ps, payload, elapsed=None):
    return {
        "expressionId": ps.id,
        "profilingInfo": [] if elapsed is None else [{"type": "ExecutionTime", "nanoTime": elapsed}],
        "fromCache": False,
        "range": ps.range,
        "payload": payload,
    }


_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08  # inspect's values, without importing it


def bind_arguments(func, args, kwargs):
    """inspect.signature binding with defaults applied: {param: value}."""
    code = getattr(func, "__code__", None)
    if (
        not args
        and not kwargs
        and type(func) is types.FunctionType
        and code.co_argcount == 0
        and code.co_kwonlyargcount == 0
        and not code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS)
        and not hasattr(func, "__wrapped__")
        and not hasattr(func, "__signature__")
    ):
        return {}  # a function of no parameters (most tests): nothing to bind
    import inspect  # imported on first need: it costs a kernel start ~5 ms

    sig = inspect.signature(func)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)
