"""The Plan of a module's top level run as a script (PROTOCOL.md 7.1).

It is a function body's plan (plan.py, with the script's globals as its
locals: the namespace is the frame's) with two differences: a def, class
or import statement is labelled by the names it binds
(labelling.script_base), and an import statement of project modules
depends on their versions (an IMPORT dep), so editing an imported module
re-runs the import and what reads its names, as a reload re-binds a
module's globals.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, List, Optional, Tuple

from . import analysis
from .labelling import SCRIPT, number_labels, script_base
from .plan import IMPORT, Plan, PlanStmt, build_plan
from .records import resolve

if TYPE_CHECKING:
    from .modules import ModuleRecord, ModuleTable
    from .text import Source

class _ScriptBody:
    """A module's top level seen as a function body of no parameters."""

    __slots__ = ("body", "args")
    _NO_ARGS = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])

    def __init__(self, tree: ast.Module) -> None:
        self.body = tree.body
        self.args = self._NO_ARGS


def build_script_plan(analyzer: analysis.Analyzer, source: Source, module: str, modules: ModuleTable,
                      previous: Optional[Plan] = None) -> Plan:
    """The Plan of module's top level run as a script (the module doc)."""
    plan = build_plan(analyzer, source, module, SCRIPT, _ScriptBody(source.tree), previous)
    stmts = plan.stmts
    keep = (
        previous is not None
        and plan.parent == previous.serial
        and plan.changed is not None
        and all(_script_base(stmts[k]) == _script_base(previous.stmts[k]) for k in plan.changed)
    )
    if not keep:
        # An id changed: the plan shares nothing with previous.
        _relabel(plan, module)
    add_import_deps(plan, modules.records.get(module), modules, previous if keep else None)
    return plan


def add_import_deps(plan: Plan, rec: Optional[ModuleRecord], modules: ModuleTable, previous: Optional[Plan]) -> None:
    """Give every statement of plan that imports project modules (anywhere
    in it: an import statement, an import under an if or try, an import in a
    nested def) an IMPORT dep on their versions, in a function body as in a
    script: editing helpers.py re-runs `import helpers` inside main as it
    re-runs a module-level one. previous: the plan this one was derived
    from, sharing the statements not in plan.changed (only the changed ones
    need a look), or None."""
    stmts = plan.stmts
    if previous is not None and plan.changed is not None and plan.parent == previous.serial:
        changed = set(plan.changed)
        import_nodes = [k for k in previous.import_nodes if k not in changed]
        import_nodes += [k for k in changed if stmts[k].info.imports]
        import_nodes.sort()
    else:
        import_nodes = [ps.index for ps in stmts if ps.info.imports]
    for k in import_nodes:
        _add_import_dep(stmts[k], rec, modules)
    plan.import_nodes = tuple(import_nodes)
    plan.imports = tuple(k for k in import_nodes if stmts[k].deps and stmts[k].deps[-1][1] == IMPORT)


def _relabel(plan: Plan, module: str) -> None:
    """Give the plan's statements their script labels; when an id changed,
    the plan shares nothing with the one it was made from."""
    stmts = plan.stmts
    labels = script_labels(stmts)
    prefix = "%s:%s/" % (module, SCRIPT)
    relabel = False
    for ps, label in zip(stmts, labels):
        if ps.id != prefix + label:
            ps.id = prefix + label
            relabel = True
    if relabel:
        plan.by_id = {ps.id: ps for ps in stmts}
        plan.ids = [ps.id for ps in stmts]
        plan.layout_token = object()
        plan.parent = None  # other ids: nothing is carried over (rerun.RerunPlanner.sync)
        plan.changed = None


def _add_import_dep(ps: PlanStmt, rec: Optional[ModuleRecord], modules: ModuleTable) -> None:
    """Give a statement importing modules its IMPORT dep (once)."""
    if not (ps.deps and ps.deps[-1][1] == IMPORT):
        targets = _import_targets(ps.info.imports, rec, modules)
        if targets:
            ps.deps = ps.deps + (("\0import", IMPORT, targets),)
            ps.dep_names = ps.dep_names + ("\0import",)


def _script_base(ps: PlanStmt) -> Optional[str]:
    """The base of a statement's script label (script_labels)."""
    return script_base(ps.node, ps.info.label)


def script_labels(stmts: List[PlanStmt]) -> List[str]:
    """5.2's labels, except that def, class and import statements are
    labelled by the names they bind (7.1)."""
    return number_labels(_script_base(ps) for ps in stmts)


def _import_targets(imports: Tuple[analysis.Import, ...], rec: Optional[ModuleRecord],
                    modules: ModuleTable) -> Tuple[str, ...]:
    """The project modules a statement's imports load (every package on the way)."""
    found: List[str] = []
    for level, module, names, is_from in imports:
        if is_from:
            base = resolve(rec, level, module) if rec is not None else None
            if base is None:
                continue
            bases = [base] + [base + "." + name for name, _ in names if name != "*"]
        else:
            bases = [module]
        for base in bases:
            parts = base.split(".")
            for k in range(1, len(parts) + 1):
                name = ".".join(parts[:k])
                if name not in found and modules.is_project(name):
                    found.append(name)
    return tuple(found)
