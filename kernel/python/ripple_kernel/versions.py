"""Global versions: for each module-level name of a project module, a hash
that changes exactly when what the name's value can depend on changes.

A name's version hashes the normalised source of the top-level statements
binding it plus the versions of the module globals those statements read,
across modules through imports (``import m``: all of m, the node (m, "*");
``from m import x``: (m, x); star imports: every public name); cycles are
hashed as one strongly connected component. Non-project modules and
builtins never change. A frame statement reading global g is re-run iff
g's version changed (the caching invariant, rerun.py).

GlobalVersions keeps the versions of the modules asked for until the next
change of any module (invalidate()); the module table calls that on every
load, reload and removal.
"""

from __future__ import annotations

import ast
import builtins
import copy
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from . import analysis
from .records import OK, ModuleRecord, resolve
from .text import Source

try:
    from _blake2 import blake2b as _blake2b  # type: ignore[import]  # hashlib's OpenSSL import costs 3 ms
except ImportError:  # pragma: no cover - a CPython without _blake2
    from hashlib import blake2b as _blake2b

_BUILTINS = frozenset(dir(builtins))
BUILTIN_VERSION = "builtin"
UNBOUND_VERSION = "unbound"

# A node of the version graph: (module, global name), or (module, "*") for
# a whole module.
Node = Tuple[str, str]
# An import of a statement: (level, module or "", [(name, asname)], is_from).
Import = Tuple[int, str, Tuple[Tuple[str, Optional[str]], ...], bool]


class TopStmt:
    """Module-level facts of one top-level statement (cached by text)."""

    __slots__ = ("binds", "reads", "own", "imports", "star", "generator", "inner")

    def __init__(self, binds: FrozenSet[str], reads: FrozenSet[str], own: str, imports: List[Import],
                 star: List[Tuple[int, str]], generator: bool = False, inner: bool = False) -> None:
        self.binds = binds  # names bound at module level
        self.reads = reads  # module-level names it reads (functions: free names)
        self.own = own  # hash of its normalised source
        self.imports = imports  # star imports left out
        self.star = star  # [(level, module)] of star imports
        self.generator = generator  # a def whose body yields or awaits
        # A def or class: its imports run inside it (when called) and bind
        # no module-level name, yet what it computes depends on them.
        self.inner = inner


class GlobalVersions:
    """The versions of the project modules' globals; see the module doc."""

    def __init__(self, records: Dict[str, ModuleRecord], analyzer: analysis.Analyzer) -> None:
        self.records = records  # the module table's, by name
        self.analyzer = analyzer
        self._versions: Optional[Dict[str, Dict[str, str]]] = None  # name -> {global: version}; None = recompute
        self._module_hash: Dict[str, str] = {}
        self._top_cache: Dict[str, TopStmt] = {}  # segment text -> TopStmt
        # stmt -> (stmt, StmtInfo): nodes an incremental parse kept (keyed
        # by the node: AST nodes hash by identity; plan.NodeMemo)
        self._node_memo: Dict[ast.stmt, Tuple[ast.stmt, analysis.StmtInfo]] = {}

    def invalidate(self) -> None:
        """Forget every version: a module changed."""
        self._versions = None

    def versions(self, name: str) -> Dict[str, str]:
        """{global name: version} of a loaded module (empty if unknown)."""
        if self._versions is None or name not in self._versions:
            self._compute(name)
        assert self._versions is not None
        return self._versions.get(name, {})

    def module_hash(self, name: str) -> str:
        if self._versions is None or name not in self._versions:
            self._compute(name)
        return self._module_hash.get(name, UNBOUND_VERSION)

    def global_version(self, module: str, name: str) -> str:
        v = self.versions(module).get(name)
        if v is not None:
            return v
        return BUILTIN_VERSION if name in _BUILTINS else UNBOUND_VERSION

    # -- top-level statements ------------------------------------------------------

    def top(self, rec: ModuleRecord) -> List[TopStmt]:
        """Per top-level statement facts of rec.source."""
        if rec.top is not None:
            return rec.top
        src = rec.source
        assert src is not None
        out = []
        for node in src.tree.body:
            seg = src.segment(node)
            top = self._top_cache.get(seg)
            if top is None:
                top = self._analyze_top(src, node)
                if len(self._top_cache) > 50000:
                    self._top_cache.clear()
                self._top_cache[seg] = top
            out.append(top)
        rec.top = out
        return out

    def _analyze_top(self, src: Source, node: ast.stmt) -> TopStmt:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(node.body) > 4:
            binds, reads, own, raw_imports, generator = self._analyze_long_def(src, node)
        else:
            info = analysis.analyze(node)
            reads = set(info.uses)
            generator = False
            own = _hash(info.key)
            # A module-level mutation (CONFIG.append(1)) is part of the
            # mutated global's version too.
            binds = info.defines
            raw_imports = list(info.imports)
        imports = []
        star = []
        for level, module, names, is_from in raw_imports:
            if is_from:
                if any(name == "*" for name, _ in names):
                    star.append((level, module))
                names = tuple((n, a) for n, a in names if n != "*")
            imports.append((level, module, names, is_from))
        inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        return TopStmt(frozenset(binds), frozenset(reads), own, imports, star, generator, inner)

    def _analyze_long_def(
        self, src: Source, node: ast.stmt
    ) -> Tuple[FrozenSet[str], Set[str], str, List[Import], bool]:
        """(binds, reads, own hash, imports, generator) of a long def or
        class, built from the body statements' cached analysis so an edit
        inside a long function costs one statement, not the function."""
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        header = copy.copy(node)
        header.body = [ast.Pass()]
        head = analysis.analyze(header)
        reads = set(head.uses)
        binds_inside: Set[str] = set()
        keys = [head.key]
        raw_imports: List[Import] = list(head.imports)
        generator = False
        memo = self._node_memo
        if len(memo) > 200000:
            memo.clear()
        for stmt in node.body:
            hit = memo.get(stmt)
            if hit is not None and hit[0] is stmt:
                info = hit[1]
            else:
                info = self.analyzer.info(src.segment(stmt), stmt)
                memo[stmt] = (stmt, info)
            generator = generator or info.yields
            reads |= info.uses
            binds_inside |= info.defines
            keys.append(info.key)
            raw_imports.extend(info.imports)
        if not isinstance(node, ast.ClassDef):
            reads -= binds_inside | set(analysis.parameter_names(node.args))
        return head.binds, reads, _hash("\0".join(keys)), raw_imports, generator

    # -- versions --------------------------------------------------------------------

    def _compute(self, root: str) -> None:
        """Versions of every module-level name of module root and of the
        modules it reaches through imports (see module doc).

        A name's version depends only on what it reaches, so the versions of
        root's closure computed alone equal those of a computation over every
        module: computing them per requested module keeps a kernel that loads
        hundreds of modules one by one (a test suite) from recomputing all of
        them at every load (it was quadratic). Results are kept until the
        next change of any module (invalidate)."""
        if self._versions is None:
            self._versions, self._module_hash = {}, {}
        done = self._versions
        closure = _Closure(self.records, self.top, done)
        if closure.bound_of(root) is None:
            done[root] = {}
            return
        closure.build(root)
        # Modules computed before (reached, not rebuilt) enter as fixed
        # versions: a node of theirs is hashed by its known version.
        known = {}
        for deps in closure.edges.values():
            for dep in deps:
                if dep not in closure.own and dep[0] in done:
                    v = self._module_hash.get(dep[0]) if dep[1] == "*" else done[dep[0]].get(dep[1])
                    if v is not None:
                        known[dep] = v
        result = _hash_graph(closure.own, closure.edges, known)
        for mod in closure.built:
            done.setdefault(mod, {})
        for (mod, gname), v in result.items():
            if mod not in closure.built:
                continue
            if gname == "*":
                self._module_hash[mod] = v
            else:
                done[mod][gname] = v


class _Closure:
    """The version graph of one module's import closure: each node's own
    text (own) and the nodes it depends on (edges); modules whose versions
    are known already (done) are reached, not built."""

    def __init__(self, records: Dict[str, ModuleRecord], top: Callable[[ModuleRecord], List[TopStmt]],
                 done: Dict[str, Dict[str, str]]) -> None:
        self.records = records
        self.top = top
        self.done = done
        self.recs: Dict[str, ModuleRecord] = {}
        self.tops: Dict[str, List[TopStmt]] = {}
        self.bound: Dict[str, Dict[str, List[int]]] = {}  # module -> {name: [top indices]}, for modules met so far
        self.own: Dict[Node, str] = {}
        self.edges: Dict[Node, Set[Node]] = {}
        self.built: Set[str] = set()

    def bound_of(self, mod: str) -> Optional[Dict[str, List[int]]]:
        """The binding table of an ok module, None for any other name."""
        table = self.bound.get(mod)
        if table is not None or mod in self.recs:
            return table
        rec = self.records.get(mod)
        if rec is None or rec.state != OK or rec.source is None:
            return None
        self.recs[mod] = rec
        stmts = self.tops[mod] = self.top(rec)
        table = {}
        for i, top in enumerate(stmts):
            for b in top.binds:
                table.setdefault(b, []).append(i)
        self.bound[mod] = table
        return table

    def build(self, root: str) -> None:
        """The nodes of root and of every module it reaches (bound_of(root) first)."""
        todo = [root]
        while todo:
            mod = todo.pop()
            if mod in self.built or mod in self.done:
                continue
            self.built.add(mod)
            for dep_mod in self._add_module(mod):
                if dep_mod not in self.built:
                    todo.append(dep_mod)

    def _add_module(self, mod: str) -> List[str]:
        """Add mod's nodes; answer the modules its names depend on."""
        stmts = self.tops[mod]
        table = self.bound[mod]
        rec = self.recs[mod]
        star_names = self._star_names(rec, stmts)
        own, edges = self.own, self.edges
        for gname, indices in table.items():
            node = (mod, gname)
            parts = []
            deps: Set[Node] = set()
            for i in indices:
                top = stmts[i]
                parts.append(top.own)
                for r in top.reads:
                    if r in table:
                        deps.add((mod, r))
                self._import_deps(rec, top.imports, None if top.inner else gname, deps)
            for src_node in star_names.get(gname, ()):
                deps.add(src_node)
            own[node] = "|".join(parts)
            edges[node] = deps
        for gname, srcs in star_names.items():
            if gname not in table:
                own[(mod, gname)] = "star"
                edges[(mod, gname)] = set(srcs)
        star = (mod, "*")
        own[star] = "module"
        edges[star] = {(mod, n) for n in table} | {(mod, n) for n in star_names}
        reached = []
        for gname in list(table) + list(star_names):
            for dep_mod, _ in edges.get((mod, gname), ()):
                reached.append(dep_mod)
        return reached

    def _star_names(self, rec: ModuleRecord, stmts: List[TopStmt]) -> Dict[str, List[Node]]:
        """{name: [(module, name)]} of the public names rec's star imports bind."""
        star_names: Dict[str, List[Node]] = {}
        for top in stmts:
            for level, target in top.star:
                full = resolve(rec, level, target)
                if full is None:
                    continue
                names = self.bound_of(full)
                if names is not None:
                    for n in names:
                        if not n.startswith("_"):
                            star_names.setdefault(n, []).append((full, n))
        return star_names

    def _import_deps(self, rec: ModuleRecord, imports: Iterable[Import], gname: Optional[str], deps: Set[Node]) -> None:
        """Add to deps the nodes the imports of a statement binding gname give
        it (gname None: every import counts, those of a def's body)."""
        for level, module, names, is_from in imports:
            base = resolve(rec, level, module)
            if base is None:
                continue
            if not is_from:
                asname = names[0][1] if names else None
                if gname is not None and (asname or base.split(".")[0]) != gname:
                    continue
                pieces = base.split(".")
                for k in range(1, len(pieces) + 1):
                    cand = ".".join(pieces[:k])
                    if self.bound_of(cand) is not None:
                        deps.add((cand, "*"))
            else:
                for item, asname in names or ():
                    if gname is not None and (asname or item) != gname:
                        continue
                    base_names = self.bound_of(base)
                    if base_names is not None and item in base_names:
                        deps.add((base, item))
                    elif self.bound_of(base + "." + item) is not None:
                        deps.add((base + "." + item, "*"))


def _hash(s: str) -> str:
    return _blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _hash_graph(own: Dict[Node, str], edges: Dict[Node, Set[Node]],
                known: Optional[Dict[Node, str]] = None) -> Dict[Node, str]:
    """Version of every node of own: its own text plus its dependencies'
    versions (known gives those of dependencies outside own; another
    dependency outside own does not count).

    Strongly connected components (mutual recursion, import cycles) are
    hashed together: a change anywhere in a cycle changes all its members.
    Tarjan's algorithm, iterative; components are hashed as they complete
    (dependencies first).
    """
    known = known or {}
    index: Dict[Node, int] = {}
    low: Dict[Node, int] = {}
    on_stack: Set[Node] = set()
    stack: List[Node] = []
    result: Dict[Node, str] = {}
    counter = [0]
    for start in own:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for dep in it:
                if dep not in own:
                    continue
                if dep not in index:
                    index[dep] = low[dep] = counter[0]
                    counter[0] += 1
                    stack.append(dep)
                    on_stack.add(dep)
                    work.append((dep, iter(sorted(edges.get(dep, ())))))
                    advanced = True
                    break
                if dep in on_stack:
                    low[node] = min(low[node], index[dep])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                _hash_component(members, own, edges, known, result)
    return result


def _hash_component(members: List[Node], own: Dict[Node, str], edges: Dict[Node, Set[Node]],
                    known: Dict[Node, str], result: Dict[Node, str]) -> None:
    """Set the versions of one strongly connected component in result."""
    members.sort()
    member_set = set(members)
    parts = []
    for m in members:
        parts.append("%s:%s=%s" % (m[0], m[1], own[m]))
        for dep in sorted(edges.get(m, ())):
            if dep in member_set:
                continue
            v = result.get(dep) if dep in own else known.get(dep)
            if v is not None:
                parts.append("%s:%s@%s" % (dep[0], dep[1], v))
    group = _hash("\n".join(parts))
    for m in members:
        result[m] = group if len(members) == 1 else _hash(group + m[0] + ":" + m[1])
