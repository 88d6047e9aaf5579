"""An edit that leaves a statement's values equal stops there (issue 27).

A statement of R that re-ran and bound, for every name it defines, a value
equal to the one it bound before (``x = 0`` edited to ``x = 1 - 1``) hands
its dependents nothing new: a dependent computed from the old value would
compute the same from the new one. Equal here means interchangeable, not
just ``==``: plain immutable values with no identity a program could
observe (int, float, str, bytes, bool, None, and tuples and frozensets of
them), of the very same type (``True == 1``, ``0.0 == -0.0`` are not
equal here), a float by its bits (NaN never equal), a frozenset in the
same iteration order (code may iterate it). Anything else, a large value
included, counts as changed: the dependents run, as without this rule.

Where the rule acts: RerunPlanner (rerun.py) computes R in full, then, for
each candidate (a member whose only edges in the fixed point are its
dependents: it mutates nothing, has no live effect, reads nothing dirty),
the smaller R it would get without those edges; the difference is what
equality may skip, kept when it all comes after the candidate (Rerun.lazy).
The run (runner.FramePass) drops it from R after the candidate ran with
equal values, and moves its dependents' signatures to the candidate's new
stamp, as a run of theirs would record.
"""

from __future__ import annotations

from typing import List, Tuple

from .frame import DELETED
from .objects import UserValue

_SCALARS = (int, str, bytes, bool, type(None))
_LIMIT = 256  # elements compared at most; a larger value counts as changed


def _same(a: UserValue, b: UserValue, budget: List[int]) -> bool:
    t = type(a)
    if t is not type(b):
        return False
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if t in _SCALARS:
        return bool(a == b)
    if t is float:
        return bool(a == a and a.hex() == b.hex())
    if t is tuple or t is frozenset:
        xs, ys = tuple(a), tuple(b)
        return len(xs) == len(ys) and all(_same(x, y, budget) for x, y in zip(xs, ys))
    return False


def same_value(a: object, b: object) -> bool:
    """Whether a and b are interchangeable plain immutable values (the
    module doc)."""
    return _same(a, b, [_LIMIT])


def plain(v: object) -> bool:
    """Whether v is a value same_value can find equal to another."""
    return same_value(v, v)


def same_bindings(old: Tuple[Tuple[str, object], ...], new: Tuple[Tuple[str, object], ...]) -> bool:
    """Whether a statement's new bindings are its old ones, name by name."""
    if len(old) != len(new):
        return False
    for (n1, v1), (n2, v2) in zip(old, new):
        if n1 != n2:
            return False
        if v1 is DELETED or v2 is DELETED:
            if v1 is not v2:
                return False
        elif not same_value(v1, v2):
            return False
    return True
