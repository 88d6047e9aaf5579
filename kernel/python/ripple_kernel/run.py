"""The names other modules imported from the engine's old single run
module, re-exported while they move to the modules that now hold them
(runner, frame, plan, scriptplan, objects). To be removed."""

from __future__ import annotations

from .frame import BLOCK, DELETED, NOT_REACHED, PENDING, Entry, Frame, TrackedDict, bind_arguments, class_cell  # noqa: F401
from .objects import immutable as _immutable  # noqa: F401
from .plan import GLOBAL, IMPORT, LOCAL, PARAM, Plan, PlanStmt, build_plan, find_function  # noqa: F401
from .runner import Failure, Runner  # noqa: F401
from .scriptplan import SCRIPT, build_script_plan, script_labels  # noqa: F401
