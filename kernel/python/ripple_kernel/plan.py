"""A Plan: the static view of one function body at one source generation.

For each statement of the body: its expression id (labelling.py's
numbering), its StmtInfo (analysis.py), and the definer of every name it
uses: the last earlier statement defining it (LOCAL), else a parameter
(PARAM), else a module global or builtin (GLOBAL); a script's import
statement also depends on the versions of the project modules it imports
(IMPORT, scriptplan.py). The rules that make this conservative (compound
statements, code that runs later carrying free names, `nonlocal` writes)
are the caching invariant's (rerun.py's module doc).

build_plan makes a plan from scratch, or derives it from the previous one
when an edit replaced one statement that binds the same names
(_update_plan): an edit of a long function costs one statement's analysis.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import operator
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, List, Optional, Protocol, Sequence, Set,
                    Tuple, Union, cast)

from . import analysis
from .instrument import future_flags
from .labelling import SCRIPT as SCRIPT_QUALNAME, number_labels

if TYPE_CHECKING:
    from .api import WireObject
    from .text import Source

LOCAL, PARAM, GLOBAL = 0, 1, 2
# A script's import statement depends on the versions of the project
# modules it imports (ref: the module names); see scriptplan.py.
IMPORT = 3

# A dependency's ref: the definer's index (LOCAL), None (PARAM, GLOBAL) or
# the imported project modules' names (IMPORT).
DepRef = Union[int, None, Tuple[str, ...]]
Dep = Tuple[str, int, DepRef]  # (name, kind, ref)
Resolved = Dict[str, Tuple[int, DepRef]]  # name -> (kind, ref)


class Body(Protocol):
    """What a plan is made from: a def node, or a script's top level."""

    body: List[ast.stmt]
    args: ast.arguments


class PlanStmt:
    """One statement of a Plan. Slotted: a plan holds one per statement."""

    __slots__ = ("index", "id", "node", "text", "info", "range", "deps", "dep_names", "local_deps", "dep_of", "defines")

    def __init__(self, index: int, id_: str, node: ast.stmt, text: str, info: analysis.StmtInfo,
                 range_: WireObject) -> None:
        self.index = index
        self.id = id_
        self.node = node
        self.text = text
        self.info = info
        self.range = range_
        self.deps: Tuple[Dep, ...] = ()  # sorted by name
        self.dep_names: Tuple[str, ...] = ()
        self.local_deps: Tuple[int, ...] = ()  # indices of local definers
        self.dep_of: Resolved = {}
        # info.defines plus the frame names that nested functions it calls
        # rebind through `nonlocal` (Plan.writes): the names whose values
        # its cache entry keeps.
        self.defines: FrozenSet[str] = info.defines

    def set_deps(self, resolved: Resolved) -> None:
        deps = tuple((name,) + resolved[name] for name in sorted(resolved))
        self.deps = deps
        self.dep_names = tuple(d[0] for d in deps)
        self.dep_of = resolved
        self.local_deps = tuple(sorted({cast(int, ref) for _, kind, ref in deps if kind == LOCAL}))


_PLAN_SERIALS = itertools.count(1)
# Keyed by the node itself: AST nodes hash and compare by identity (id()
# would raise an audit event per node: effects.object_key).
NodeMemo = Dict[ast.stmt, Tuple[ast.stmt, str, analysis.StmtInfo]]


@dataclass(eq=False)
class Plan:
    """Static view of one function body at one source generation.

    Compared by identity (eq=False): a frame keeps the plan it last checked.
    """

    module: str
    qualname: str
    generation: int
    filename: str
    path: str
    args_dump: str = ""
    stmts: List[PlanStmt] = field(default_factory=list)
    params: List[str] = field(default_factory=list)
    bound: FrozenSet[str] = frozenset()
    flags: int = 0
    rdeps: List[List[int]] = field(default_factory=list)  # per statement: the statements with a LOCAL dep on it
    by_id: Dict[str, PlanStmt] = field(default_factory=dict)
    node_memo: NodeMemo = field(default_factory=dict)  # node -> (node, text, info): reuse across generations
    # per statement: free names of later-running code its names carry
    carried: List[FrozenSet[str]] = field(default_factory=list)
    # per statement: frame names that later-running code its names carry
    # rebinds (`nonlocal`): a statement reading such a name may call it.
    writes: List[FrozenSet[str]] = field(default_factory=list)
    # How this plan relates to the one it was made from, for the frame's
    # incremental bookkeeping (rerun.RerunPlanner.sync): serial names the
    # plan; parent is the serial of the plan _update_plan derived it from
    # (None: built from scratch, nothing is known to be shared) and changed
    # the indices whose PlanStmt differs from the parent's (every other
    # index holds the parent's very PlanStmt object).
    serial: int = field(default_factory=lambda: next(_PLAN_SERIALS))
    parent: Optional[int] = None
    changed: Optional[Tuple[int, ...]] = None
    nodes: List[ast.stmt] = field(default_factory=list)  # the body's statement nodes (PlanStmt.node), in order
    ids: List[str] = field(default_factory=list)  # the statements' ids, in order
    # The same object for plans whose ids are the same, in the same order
    # (rerun.layout); _update_plan passes it on.
    layout_token: object = field(default_factory=object)
    # module global name -> indices of the statements with a GLOBAL dep on it
    users: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    imports: Tuple[int, ...] = ()  # indices of the statements with an IMPORT dep (scripts)
    import_nodes: Tuple[int, ...] = ()  # indices of import statements (scripts: build_script_plan)
    # name -> ascending indices of the statements whose defines hold it
    # (the last definer before k: bisect); _update_plan shares it, as it
    # keeps every statement's defines.
    definers: Dict[str, List[int]] = field(default_factory=dict)
    has_writes: bool = False  # any(writes)
    declared: Optional[FrozenSet[str]] = None  # declared_globals(self), once computed


def find_function(src: Source, qualname: str) -> Optional[ast.FunctionDef]:
    """The (last) def node of qualname (``f`` or ``Class.method``) in the
    module version src, or None (an async def is returned too: the caller
    refuses it). The top-level names are indexed once per version: a test
    module of a thousand functions is searched per run."""
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
    return node  # type: ignore[return-value]  # an AsyncFunctionDef has the same fields


def build_plan(analyzer: analysis.Analyzer, source: Source, module: str, qualname: str, func: Body,
               previous: Optional[Plan] = None) -> Plan:
    """The Plan of func (an ast def node) in source.

    When exactly one statement changed since previous (an incremental parse
    keeps the other nodes) and it binds the same names, only that statement
    is analysed again: every other statement's definers are unchanged.
    """
    args_dump = analysis.node_key(func.args)
    if previous is not None:
        updated = _update_plan(analyzer, source, func, previous, _Target(module, qualname, args_dump))
        if updated is not None:
            return updated
    plan = Plan(module, qualname, source.generation, source.filename, source.path, args_dump)
    texts, infos = _analyse_body(analyzer, source, func.body, previous, plan.node_memo)
    labels = number_labels(info.label for info in infos)
    plan.params = analysis.parameter_names(func.args)
    _link(plan, source, func.body, texts, infos, ["%s:%s/%s" % (module, qualname, label) for label in labels])
    plan.nodes = list(func.body)
    plan.ids = [ps.id for ps in plan.stmts]
    plan.flags = future_flags(source.tree)
    return plan


def _analyse_body(analyzer: analysis.Analyzer, source: Source, body: Sequence[ast.stmt], previous: Optional[Plan],
                  memo: NodeMemo) -> Tuple[List[str], List[analysis.StmtInfo]]:
    """The text and StmtInfo of every statement, reusing previous's for the
    nodes an incremental parse kept; fills memo for the next plan."""
    memo_old = previous.node_memo if previous is not None else {}
    infos = []
    texts = []
    for node in body:
        hit = memo_old.get(node)
        if hit is not None and hit[0] is node:
            text, info = hit[1], hit[2]
        else:
            text = source.segment(node)
            info = analyzer.info(text, node)
        memo[node] = (node, text, info)
        texts.append(text)
        infos.append(info)
    return texts, infos


def _link(plan: Plan, source: Source, body: Sequence[ast.stmt], texts: List[str], infos: List[analysis.StmtInfo],
          ids: List[str]) -> None:
    """Give every statement its definers, in order, and fill the plan's
    per-statement tables (rdeps, carried, writes, users, definers)."""
    param_set = frozenset(plan.params)
    bound: Set[str] = set()
    last: Dict[str, int] = {}
    carried: List[FrozenSet[str]] = []
    writes: List[FrozenSet[str]] = []
    users: Dict[str, List[int]] = {}
    definers: Dict[str, List[int]] = {}
    rdeps: List[List[int]] = [[] for _ in body]
    # A script's globals are its frame's names (scriptplan): `global x` in
    # a function it defines rebinds one of them, like `nonlocal x`.
    script = plan.qualname == SCRIPT_QUALNAME
    for i, node in enumerate(body):
        info = infos[i]
        ps = PlanStmt(i, ids[i], node, texts[i], info, source.node_range(node))
        resolved, written, carry = resolve(info, param_set, last.get, carried, writes)
        if written:
            ps.defines = info.defines | written
        ps.set_deps(resolved)
        for name, kind, _ in ps.deps:
            if kind == GLOBAL:
                users.setdefault(name, []).append(i)
        for j in ps.local_deps:
            rdeps[j].append(i)
        carried.append(frozenset(carry) if carry else frozenset())
        wr = set(info.later_writes)
        if script:
            wr |= info.later_globals
        for j in ps.local_deps:
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


def resolve(info: analysis.StmtInfo, param_set: FrozenSet[str], definer_before: Callable[[str], Optional[int]],
            carried: List[FrozenSet[str]], writes: List[FrozenSet[str]]) -> Tuple[Resolved, Set[str], Set[str]]:
    """(definers, written, carry) of a statement: the (kind, ref) of every
    name it uses (and, compound, defines), following the names code bound
    to them carries; the frame names calls of such code rebind through
    `nonlocal` (a conditional binding: it depends on the earlier definer
    too); the free names of later-running code its own names carry.

    definer_before(name): the index of the last earlier statement defining
    name, or None."""
    names = set(info.uses)
    if info.compound:
        names |= info.defines
    resolved: Resolved = {}
    queue = list(names)
    written: Set[str] = set()
    carry = set(info.lazy)
    while queue:
        name = queue.pop()
        if name in resolved:
            continue
        j = definer_before(name)
        if j is not None:
            resolved[name] = (LOCAL, j)
            carry |= carried[j]
            for extra in carried[j]:
                if extra not in resolved:
                    queue.append(extra)
            for extra in writes[j]:
                written.add(extra)
                if extra not in resolved:
                    queue.append(extra)
        elif name in param_set:
            resolved[name] = (PARAM, None)
        else:
            resolved[name] = (GLOBAL, None)
    return resolved, written, carry


@dataclass
class _Target:
    """What a plan is of: the function and its signature's normalised text."""

    module: str
    qualname: str
    args_dump: str


def _update_plan(analyzer: analysis.Analyzer, source: Source, func: Body, previous: Plan,
                 target: _Target) -> Optional[Plan]:
    """previous with the one statement an edit replaced analysed again, or
    None when that is not enough (build the plan from scratch)."""
    body = func.body
    if (
        previous.module != target.module
        or previous.qualname != target.qualname
        or previous.filename != source.filename
        or len(body) != len(previous.stmts)
        or previous.args_dump != target.args_dump
        or previous.has_writes
    ):
        return None
    # Which nodes the incremental parse replaced, compared by identity
    # without a Python loop over the body (an edit of a long function).
    moved = list(map(operator.is_not, body, previous.nodes))
    count = moved.count(True)
    if count > 1:
        return None
    plan = _carry_over(previous, source)
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
    ps = _reanalyse(analyzer, source, previous, body[p], p)
    if ps is None:
        return None
    _replace(plan, previous, ps)
    return plan


def _carry_over(previous: Plan, source: Source) -> Plan:
    """A plan of source sharing everything an edit of one statement that
    binds the same names keeps: the ids stay (labels and defined names are
    unchanged), and so does the layout."""
    return Plan(
        previous.module, previous.qualname, source.generation, source.filename, source.path, previous.args_dump,
        params=previous.params, bound=previous.bound, flags=future_flags(source.tree),
        carried=previous.carried, writes=previous.writes, ids=previous.ids, layout_token=previous.layout_token,
        imports=previous.imports, parent=previous.serial, definers=previous.definers,
    )


def _reanalyse(analyzer: analysis.Analyzer, source: Source, previous: Plan, node: ast.stmt,
               p: int) -> Optional[PlanStmt]:
    """The PlanStmt of the new statement node at index p, or None when it
    binds, labels or carries other names than the one it replaces."""
    text = source.segment(node)
    info = analyzer.info(text, node)
    was = previous.stmts[p].info
    if (
        info.defines != was.defines
        or info.binds != was.binds
        or info.label != was.label
        or info.lazy != was.lazy
        or info.later_writes
        or info.later_globals
        or info.yields
    ):
        return None
    definers = previous.definers

    def definer_before(name: str) -> Optional[int]:
        j = last_before(definers, name, p)
        return j if j >= 0 else None

    # No statement has writes (has_writes is False): nothing is written.
    resolved, _, carry = resolve(info, frozenset(previous.params), definer_before, previous.carried, previous.writes)
    if frozenset(carry) != previous.carried[p]:
        return None
    ps = PlanStmt(p, previous.stmts[p].id, node, text, info, source.node_range(node))
    ps.set_deps(resolved)
    return ps


def _replace(plan: Plan, previous: Plan, ps: PlanStmt) -> None:
    """Fill plan as previous with statement ps.index replaced by ps."""
    p = ps.index
    before = previous.stmts[p]
    stmts = list(previous.stmts)
    stmts[p] = ps
    plan.stmts = stmts
    nodes = list(previous.nodes)
    nodes[p] = ps.node
    plan.nodes = nodes
    plan.changed = (p,)
    plan.users = _patched_users(previous.users, before, ps)
    if "global" not in before.text and "global" not in ps.text:
        plan.declared = previous.declared  # the same statements say `global` (declared_globals)
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
    if len(memo) > 2 * len(stmts) + 16:
        memo = {s.node: (s.node, s.text, s.info) for s in stmts}
    memo[ps.node] = (ps.node, ps.text, ps.info)
    plan.node_memo = memo


def _patched_users(users: Dict[str, Tuple[int, ...]], before: PlanStmt,
                   ps: PlanStmt) -> Dict[str, Tuple[int, ...]]:
    """Plan.users with statement ps.index's GLOBAL deps those of ps."""
    p = ps.index
    was_global = {name for name, kind, _ in before.deps if kind == GLOBAL}
    is_global = {name for name, kind, _ in ps.deps if kind == GLOBAL}
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
    return users


def last_before(definers: Dict[str, List[int]], name: str, k: int) -> int:
    """The index of the last statement before k defining name (Plan.definers), or -1."""
    idx = definers.get(name)
    if not idx:
        return -1
    at = bisect.bisect_left(idx, k)
    return idx[at - 1] if at else -1


def declared(plan: Plan) -> FrozenSet[str]:
    """declared_globals of plan, computed once per plan (or passed on by
    _update_plan)."""
    names = plan.declared
    if names is None:
        names = plan.declared = declared_globals(plan)
    return names


def declared_globals(plan: Plan) -> FrozenSet[str]:
    """The module globals a function's body writes by name (outside nested
    scopes): those it declares `global`, and those it assigns as
    globals()['NAME'] (a name that may also be one of its locals: in the
    engine's namespace the two are one entry).

    Nested functions too: their globals are the frame's namespace (the
    frame's locals are globals for them), so their `global X` writes the
    namespace's X, which the run carries to the module like the body's own
    (module state, modstate.py). A name the body also binds is left alone:
    one namespace entry cannot be both the frame's local and the module's
    global."""
    names = set()
    # Only statements whose text says so are walked: a plan is new after
    # every edit, and walking a long body each time costs milliseconds.
    todo: List[Tuple[ast.AST, bool]] = [(ps.node, False) for ps in plan.stmts if "global" in ps.text]
    while todo:
        node, nested = todo.pop()
        found: Iterable[str] = ()
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


def _is_globals_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals" and not node.args


# Words of statements whose compile-time errors depend on the enclosing
# function (scope declarations, loop control): scope_error checks them.
_SCOPE_WORDS = ("nonlocal", "global", "break", "continue")


def scope_error(plan: Plan, func: Body, filename: str) -> Optional[SyntaxError]:
    """The SyntaxError Python's compiler raises for a statement of the plan
    (those it changed, or all of a new plan) as part of its function, or
    None. The statements run one by one at the top of a namespace (nested
    `nonlocal` of a frame name becomes `global`: instrument), so errors
    that depend on the function around them (`nonlocal v` of a name the
    function does not bind, of a nested function's own parameter; `break`
    outside a loop) would not show: each such statement is compiled inside
    a function with the frame's parameters that binds the frame's names
    after it. A long function is compiled lazily (lazydefs), so the
    module's compile does not catch these either."""
    indices = range(len(plan.stmts)) if plan.changed is None else plan.changed
    names: Optional[List[str]] = None
    for k in indices:
        ps = plan.stmts[k]
        if not any(word in ps.text for word in _SCOPE_WORDS):
            continue
        if names is None:
            names = sorted(plan.bound - set(plan.params) - declared(plan))
        wrapper = ast.FunctionDef(name="__ripple_scope__", args=func.args, body=[ps.node], decorator_list=[],
                                  returns=None, type_comment=None)
        if hasattr(ast, "TypeVar"):
            setattr(wrapper, "type_params", [])
        if names:
            binds = ast.parse("if 0:\n    %s = None\n" % " = ".join(names)).body
            wrapper.body = [ps.node] + binds
        ast.copy_location(wrapper, ps.node)
        module = ast.Module(body=[wrapper], type_ignores=[])
        ast.fix_missing_locations(module)
        try:
            compile(module, filename, "exec", dont_inherit=True, flags=plan.flags)
        except SyntaxError as exc:
            return exc
    return None
