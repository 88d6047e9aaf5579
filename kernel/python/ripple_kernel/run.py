"""The names other modules imported from the engine's old single run
module, re-exported while they move to the modules that now hold them
(runner, frame, plan, scriptplan, objects). To be removed."""

from __future__ import annotations

from .frame import BLOCK, DELETED, NOT_REACHED, PENDING, Entry, Frame, TrackedDict, bind_arguments, class_cell
from .objects import immutable as _immutable
from .plan import GLOBAL, IMPORT, LOCAL, PARAM, Plan, PlanStmt, build_plan, find_function
from .runner import Failure, Runner
from .scriptplan import SCRIPT, build_script_plan, script_labels

__all__ = [
    "BLOCK", "DELETED", "NOT_REACHED", "PENDING", "Entry", "Frame", "TrackedDict", "bind_arguments", "class_cell",
    "_immutable", "GLOBAL", "IMPORT", "LOCAL", "PARAM", "Plan", "PlanStmt", "build_plan", "find_function",
    "Failure", "Runner", "SCRIPT", "build_script_plan", "script_labels",
]
