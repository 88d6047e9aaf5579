"""An edit that leaves a statement's values equal stops there (issue 27).

A statement of R that re-ran and bound a value equal to the one it bound
before (``x = 0`` edited to ``x = 1 - 1``) hands the dependents reading
that name nothing new: a dependent computed from the old value would
compute the same from the new one. It is decided per name: of ``a, b =
...``, the readers of ``a`` alone stay when only ``b`` changed. Equal here means interchangeable, not
just ``==``: plain immutable values with no identity a program could
observe (int, float, str, bytes, bool, None, and tuples and frozensets of
them), of the very same type (``True == 1``, ``0.0 == -0.0`` are not
equal here), a float by its bits (NaN never equal), a frozenset in the
same iteration order (code may iterate it). Anything else, a large value
included, counts as changed: the dependents run, as without this rule.

Where the rule acts: RerunPlanner (rerun.py) computes R in full, then, for
each candidate (a member that mutates nothing by name, has an entry, and
whose names bound plain values last time) and each set of its names that
may come out equal (all subsets for up to three names), the smaller R it
would get without the edges to its dependents that read only those
names; every other rule is still followed there (its effects through
calls, chains, dirty reads, module state). The difference is what equality
may skip, kept when it all comes after the candidate, holds no member
without an entry, and changes nothing else R found (Rerun.lazy). The run
(runner.FramePass._equal_stop) drops it from R once the candidate ran and
the names it bound equal are that set, and moves the skipped statements'
signatures to the candidate's new stamp, as a run of theirs would record;
a signature that differs in anything else keeps them all in R. So the
outcome is R computed as if the candidate's edges to those readers were
absent, which is what a from-scratch run of the same values computes.
"""

from __future__ import annotations

from typing import FrozenSet, List, Tuple

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


def equal_names(old: Tuple[Tuple[str, object], ...], new: Tuple[Tuple[str, object], ...]) -> FrozenSet[str]:
    """The names a statement bound to the same value as before (both
    unbound counts as the same); none when its names differ."""
    if len(old) != len(new) or any(n1 != n2 for (n1, _), (n2, _) in zip(old, new)):
        return frozenset()
    return frozenset(n for (n, v1), (_, v2) in zip(old, new)
                     if (v1 is DELETED and v2 is DELETED)
                     or (v1 is not DELETED and v2 is not DELETED and same_value(v1, v2)))
