"""Values a later statement overwrites: let go of, as Python lets go of them.

In Python, ``df = load()`` then ``df = df.dropna()`` frees the first frame
when the second statement rebinds ``df`` (if nothing else holds it). The
statement cache kept every statement's bindings, so it kept the first
DataFrame alive: a script that rebinds ``df`` ten times held ten frames,
and code that notices whether an object is alive behaved otherwise than
in Python (pandas warns SettingWithCopyWarning only while the frame a
slice was taken from is alive: tests/notebook_test.go, text_annotation).

The rule: once a run has passed the statement that rebinds a name, a value
an earlier statement bound to that name, if nothing but the cache holds it,
is written to the value journal (journal.py, table ``released``) and the
cache lets go of it: the entries' bindings (and values) read RELEASED, its
mutation log goes with it into the journal. Frame.released lists those
entries.

When a run needs it again (a statement that reads it runs again while its
creator does not: an edit of ``df = df.dropna()``), it is read back from
the journal before the run's statements run, with its mutation log, in the
entries that held it, and the rerun set grows by what reading it shows
(mutation.dirty_reads: a later statement had mutated it); it is let go of
again when the run passes the rebinding. The statement that made it does
not run again: its side effects are not repeated, as for any cached value.
Until then the rules of rerun.py see a released value as unknown
(frame.binding answers DELETED), which is their conservative case (it may
be mutable, it may alias anything).

What stays in the cache (deviations from Python's lifetimes, all on the
safe side of the caching invariant, which needs a fresh run's values):
- a value that something besides the cache holds (another name, a
  container, a LocalCall's arguments, an expression statement's value):
  Python would keep it too, and a copy read back would not be that
  object;
- a plain container holding mutable objects (a list of lists): what it
  holds may be held elsewhere too (``row = grid[0]``), and a copy read back
  would part them;
- a value that does not pickle or is larger than journal.RELEASE_CAP, and
  every value of a frame the journal does not keep (no journal: batch runs,
  ``--no-values``; LocalCall frames; frames that rebind module globals):
  reading it back would be impossible, and running its statement again
  instead would repeat its side effects (a print, a write) where a cached
  statement must not;
- numbers, strings, functions and the other values nothing can mutate
  (objects.immutable): nothing to gain.
A value read back that the journal lost meanwhile (evicted by the budget,
the file moved aside) costs its statement's entry: that statement runs
again, as after a restart without it.
"""

from __future__ import annotations

import bisect
import sys
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from .effects import object_key
from .frame import DELETED, RELEASED, Entry, Frame
from .journal import remap_log
from .journaldefs import out_value
from .objects import _children, elements, immutable
from .plan import LOCAL

if TYPE_CHECKING:
    from .journal import Journal
    from .plan import Plan
    from .rerun import Rerun


def _refs(x: object) -> int:
    return sys.getrefcount(x)


def _calibrate() -> int:
    d = object()
    return _refs(d)  # d: held by one local name, as _release holds its value


def _calibrate_slot() -> int:
    rec = [object(), 1]
    return _refs(rec[0])  # held by one list item, as _exclusive's records hold theirs


# What _refs answers for an object one local name holds, and one list item
# (the interpreter decides how many references a call adds).
_ONE_LOCAL = _calibrate()
_ONE_SLOT = _calibrate_slot()


# Weak references: shared by every weakref.ref(x) of one x (pandas' flags
# and caches hold them), never changed.
_WEAK = (weakref.ref, weakref.ProxyType, weakref.CallableProxyType)


def _exclusive(o: object) -> bool:
    """Whether the mutable objects o holds, as objects.shares looks into
    it (two levels into plain containers and instance dictionaries), are
    held by o alone. Then a copy read back differs from o for no rule: it
    shares nothing with any other object, as o did (a DataFrame whose
    cached column is also bound to a name is not let go of: the name would
    no longer be that column)."""
    return all(_refs(rec[0]) == _ONE_SLOT + rec[1] for rec in _inside(o).values())


def _inside(o: object) -> Dict[int, List[Any]]:
    """id -> [object, its references from inside o] of the mutable
    objects o holds (_exclusive). Its locals go on return: they would
    count."""
    found: Dict[int, List[Any]] = {}
    level: List[object] = [o]
    for _ in range(2):
        nxt: List[object] = []
        for x in level:
            for c in _children(x, 1000) or ():
                if immutable(c) and type(c) not in (tuple, frozenset) or isinstance(c, _WEAK):
                    continue  # (a weak reference cannot be changed: the copy's is as good)
                rec = found.get(id(c))
                if rec is None:
                    found[id(c)] = [c, 1]
                    nxt.append(c)
                else:
                    rec[1] += 1
        level = nxt
    return found


class Releaser:
    """Lets go of overwritten values of one frame's pass, and reads them
    back when it needs them (the module doc). Lets go of nothing unless
    release (a frame the journal may keep, in a run that caches)."""

    def __init__(self, journal: Optional[Journal], release: bool, frame: Frame, plan: Plan,
                 ns: Dict[str, object]) -> None:
        self.frame = frame
        self.plan = plan
        self.ns = ns
        self.store = journal  # what reads values back
        # None: the frame's values are not let go of (the module doc).
        self.journal = journal if release and journal is not None and not journal.broken else None
        self._frame_key: Optional[str] = None  # Journal.frame_key's row key, when first needed
        # Indices of the statements whose entries got live values in this
        # pass (they ran, or their values were read back): sweep looks
        # at them.
        self.fresh: Set[int] = set()
        # Mutation log keys of the values of entries a run replaced
        # (replacing): sweep drops their logs if nothing else holds them.
        self.replaced: List[int] = []

    def frame_key(self) -> Optional[str]:
        """The frame's journal row key; None (and the releaser inactive)
        when the journal does not keep the frame."""
        journal = self.journal
        if journal is None:
            return None
        if self._frame_key is None:
            fk = journal.frame_key(self.frame, self.plan) if not self.frame.gwriters and not self.frame.gbase else None
            if fk is None:
                self.journal = None
                return None
            self._frame_key = fk[0]
        return self._frame_key

    # -- reading back -----------------------------------------------------------------

    def settle(self, compute: Callable[[], Rerun], also: Iterable[str] = ()) -> Rerun:
        """R (compute()), once the released values it may need are read
        back: those the members of R would see (the value a name has
        where a member runs; also when the member is its creator: while
        released, the rules take it as unknown, and may put its creator
        in R for that alone) and those of the statements also names
        (their visualizations). R is computed again with them, as if they
        had never been let go of, until it needs no other."""
        frame = self.frame
        if frame.released:
            for eid in also:
                ps = self.plan.by_id.get(eid)
                e = frame.cache.get(eid)
                if ps is not None and e is not None and e.released:
                    for key in set(e.released.values()):
                        self._reload(ps.index, key)
        r = compute()
        for _ in range(len(self.plan.stmts) + 1):
            if not frame.released:
                break
            wanted = self._wanted(r.members, frame.sync.unverified)
            if not wanted:
                break
            for i, key in wanted:
                self._reload(i, key)
            r = compute()
        return r

    def _wanted(self, members: Set[int], failing: Set[int]) -> List[Tuple[int, str]]:
        """(creator index, key) of the released values that members may
        see, but of creators that run again for a reason of their own
        (failing: an edit, another input; a local definer of theirs is a
        member)."""
        frame, plan = self.frame, self.plan
        stmts, by_id, definers = plan.stmts, plan.by_id, plan.definers
        order = sorted(members)
        out: List[Tuple[int, str]] = []
        for eid in list(frame.released):
            e = frame.cache.get(eid)
            ps = by_id.get(eid)
            if e is None or not e.released or ps is None:
                frame.released.discard(eid)
                continue
            i = ps.index
            if i in failing or any(kind == LOCAL and ref in members for _, kind, ref in ps.deps):
                continue  # it runs again whatever its value: an input of its own does
            keys: Set[str] = set()
            for name, key in e.released.items():
                if not name or key in keys:
                    continue
                idx = definers.get(name, [])
                at = bisect.bisect_right(idx, i)
                end = idx[at] if at < len(idx) else len(stmts)
                # The members from i to the next definer of name, that
                # one if it reads i's value.
                seen = order[bisect.bisect_left(order, i):bisect.bisect_left(order, end + 1)]
                if any(j < end or any(n == name and ref == i for n, _, ref in stmts[end].deps) for j in seen):
                    keys.add(key)
            out.extend((i, key) for key in sorted(keys))
        return out

    def _reload(self, i: int, key: str) -> bool:
        """Read back the value released under key into the entries that
        held it (i's and the later definers' of its names); False when
        it cannot be: i's entry is dropped (it runs again)."""
        frame, plan = self.frame, self.plan
        stmts = plan.stmts
        journal = self.store
        payload = journal.reload(key) if journal is not None else None
        holders = self._holders(i, key)
        if payload is None:
            for j in holders:
                frame.cache.pop(stmts[j].id, None)
            frame.cache.pop(stmts[i].id, None)
            return False
        obj = payload["obj"]
        for j in holders:
            e = frame.cache[stmts[j].id]
            assert e.released is not None
            names = {n for n, k in e.released.items() if k == key}
            e.bindings = tuple((n, obj if n in names and v is RELEASED else v) for n, v in e.bindings)
            if "" in names and e.value is RELEASED:
                e.value = obj
            for n in names:
                del e.released[n]
            if not e.released:
                e.released = None
                frame.released.discard(stmts[j].id)
            e.deletes = any(v is DELETED or v is RELEASED for _, v in e.bindings)
        mutlog = payload.get("mutlog") or []
        remap = frame.journal_remap
        if journal is not None and payload.get("token") == journal.token:
            for x, creator, mutations in mutlog:
                frame.mutlog[object_key(x)] = [x, creator, list(mutations)]
        elif remap is not None:
            remap_log(frame, mutlog, remap[0], remap[1])
        else:
            remap_log(frame, mutlog, {}, {})
        frame.sync.dirty.update(holders)
        frame.sync.drop_blocks(holders)
        self.fresh.update(holders)
        return True

    def _holders(self, i: int, key: str) -> List[int]:
        """The statements whose entries name key (i's and the others that
        held the value: they get it back as one object)."""
        frame, stmts = self.frame, self.plan.stmts
        out: List[int] = []
        for j in range(len(stmts)):
            e = frame.cache.get(stmts[j].id)
            if e is not None and e.released and key in e.released.values():
                out.append(j)
        return out

    # -- letting go -------------------------------------------------------------------

    def replacing(self, k: int) -> None:
        """Statement k is about to run again: its entry's values go (with
        or without a journal), and the mutation log must not keep them
        alive (sweep)."""
        e = self.frame.cache.get(self.plan.stmts[k].id)
        if e is not None and self.frame.mutlog:
            self.replaced.extend(object_key(v) for _, v in e.bindings if v is not DELETED and v is not RELEASED)

    def ran(self, k: int) -> None:
        """Statement k ran (and has an entry): let go of the values the
        names it bound had before, if nothing else holds them."""
        if self.frame_key() is None:
            return
        self.fresh.add(k)
        e = self.frame.cache.get(self.plan.stmts[k].id)
        if e is None:
            return
        for name in _names(e):  # (a loop over the bindings would hold a value: _release counts)
            self._overwritten(name, k)

    def sweep(self) -> None:
        """At the end of the pass: values this pass made or read back whose
        names a later statement of the pass (one it ran or took from the
        cache) rebound are let go of too."""
        mutlog = self.frame.mutlog
        for key in self.replaced:
            item = mutlog.get(key)
            # Held by the log alone: no statement can read it again.
            if item is not None and _refs(item[0]) == _ONE_SLOT:
                del mutlog[key]
        self.replaced.clear()
        if not self.fresh or self.frame_key() is None:
            return
        frame, plan = self.frame, self.plan
        stmts, definers, reached = plan.stmts, plan.definers, frame.reached
        done: Set[Tuple[str, int]] = set()
        for i in sorted(self.fresh):
            e = frame.cache.get(stmts[i].id)
            if e is None:
                continue
            for name in _names(e):
                idx = definers.get(name, [])
                for k in idx[bisect.bisect_right(idx, i):]:
                    ke = frame.cache.get(stmts[k].id)
                    if stmts[k].id not in reached or ke is None:
                        break
                    if not _same(ke, e, name):
                        if (name, k) not in done:
                            done.add((name, k))
                            self._overwritten(name, k, i - 1)
                        break
        self.fresh.clear()

    def _overwritten(self, name: str, k: int, since: int = -1) -> None:
        """Let go of the values earlier statements (after since, if given)
        bound to name that statement k's binding of it is not (the module
        doc's rule)."""
        groups = _groups(self.frame, self.plan, name, k, since)
        for js in groups:
            self._release(name, js)

    def _release(self, name: str, js: List[int]) -> None:
        """Let go of the value the entries of js bind to name, if nothing
        but the cache holds it: the cache's references are dropped first,
        then counted; if any other is left, they are put back."""
        frame, stmts = self.frame, self.plan.stmts
        entries = [frame.cache[stmts[j].id] for j in js]
        obj = _bound(entries[0], name)
        for e in entries:
            e.bindings = tuple((n, RELEASED if n == name and v is obj else v) for n, v in e.bindings)
        valued = [e for e in entries if e.value is obj]
        for e in valued:
            e.value = RELEASED
        own = frame.mutlog.pop(object_key(obj), None)
        if own is not None and own[0] is not obj:
            frame.mutlog[object_key(obj)] = own  # another object's (a reused id)
            own = None
        frame.sync.drop_blocks(js)  # merged bindings hold it
        # What statements' calls were seen to leave unchanged (observe.py)
        # holds it too: a value let go of is not observed any more.
        okey = object_key(obj)
        observed: List[Dict[int, object]] = []
        for _stamp, seen in getattr(frame, "observed", {}).values():
            if seen.get(okey) is obj:
                observed.append(seen)
                del seen[okey]
        key: Optional[str] = None
        try:
            fk = self.frame_key()
            if (fk is not None and self.journal is not None and _refs(obj) == _ONE_LOCAL + (own is not None)
                    and _exclusive(obj)):
                log = [] if own is None else [(obj, own[1], list(own[2]))]
                payload = {"obj": out_value(obj, self.ns), "token": self.journal.token, "mutlog": log}
                key = self.journal.release(fk, payload)
                del payload, log
        finally:
            if key is None:  # kept (also when an interrupt came while pickling)
                for e in entries:
                    e.bindings = tuple((n, obj if n == name and v is RELEASED and not (e.released and n in e.released)
                                        else v) for n, v in e.bindings)
                for e in valued:
                    e.value = obj
                if own is not None:
                    frame.mutlog[object_key(obj)] = own
                for seen in observed:
                    seen[okey] = obj
        if key is None:
            return
        for e in entries:
            if e.released is None:
                e.released = {}
            e.released[name] = key
            if e in valued:
                e.released[""] = key
            e.deletes = True
        frame.released.update(stmts[j].id for j in js)
        frame.released_rows.add(key)
        frame.sync.dirty.update(js)


def _names(e: Entry) -> List[str]:
    return [n for n, _ in e.bindings]


def _bound(e: Entry, name: str) -> object:
    for n, v in e.bindings:
        if n == name:
            return v
    return DELETED


def _same(a: Entry, b: Entry, name: str) -> bool:
    """Whether two entries bind name to one live object."""
    v = _bound(a, name)
    return v is not RELEASED and v is not DELETED and v is _bound(b, name)


# How far back (in definers of the name) a statement that ran looks for
# values it overwrote: those further back were looked at when the run
# passed their own rebinding (sweep looks at a value made in the pass
# wherever it is). A name rebound a thousand times costs no quadratic scan.
WINDOW = 16


def _groups(frame: Frame, plan: Plan, name: str, k: int, since: int = -1) -> List[List[int]]:
    """The statements before k (after since, else among the last WINDOW
    definers of name) whose entries bind name to a live value that may be
    let go of and is not k's, grouped by value (the entries that hold one
    value). Holds no value on return: _release counts."""
    stmts = plan.stmts
    mine = frame.cache.get(stmts[k].id)
    current = _bound(mine, name) if mine is not None else DELETED
    groups: Dict[int, List[int]] = {}
    idx = plan.definers.get(name, [])
    at = bisect.bisect_left(idx, k)
    for j in idx[bisect.bisect_right(idx, since) if since >= 0 else max(0, at - WINDOW):at]:
        e = frame.cache.get(stmts[j].id)
        if e is None:
            continue
        v = _bound(e, name)
        if v is DELETED or v is RELEASED or v is current or immutable(v) or elements(v):
            continue
        groups.setdefault(id(v), []).append(j)
    return list(groups.values())
