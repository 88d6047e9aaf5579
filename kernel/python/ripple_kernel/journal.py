"""The value journal: computed statement values kept on disk, so
that a frame on a new kernel (after a server restart, a crash, the warm
spare taking over) gets its cache back instead of running its statements
again (no repeated side effects). runtime/restartKernel is a reset: the
engine invalidates every context on the kernel first, and a run with
everything invalidated takes nothing from the journal.

What is kept, and under which key:

- One row per frame: the bottom frame of a stack (an ExplicitCall whose
  arguments are all immutable values, or a script), keyed by its module,
  qualname and a hash of its arguments' pickle. LocalCall frames are not
  journalled: their parameters are objects of the caller's run.
- In the row, one record per statement of the frame's cache, under a
  content key: the hash of the statement's normalised source, the names it
  reads and, for each, the content key of its local definer, the argument
  hash, or the global's version (already a hash of the defining source and
  what it reaches, versions.py) or the imported modules' hashes; plus
  the number of earlier statements of the same hash. It says what the
  entry's ``sig`` says with kernel-local stamps, in terms a new process
  computes alike: equal keys, equal values, for deterministic code.
- The bindings, values and direct calls of all the frame's statements are
  pickled TOGETHER, with the frame's mutation log (Frame.mutlog), in
  their state at the end of the run, as the in-memory cache holds them: one
  object bound by two statements (``ys = xs``) comes back as one object,
  and the run still knows which statement mutated which object.
  A statement whose part does not pickle, or is larger than STATEMENT_CAP,
  is left out (it runs again after a restart, and so do its dependents).
  Frames whose statements rebound module globals (module state) are not
  journalled: that state is the old process's.

Values a later statement overwrote are not in the frame's row: the cache
let go of them (overwritten.py), each into a row of the ``released`` table
(Journal.release), which the statement's record names (its Entry.released);
restored, the entry keeps naming it, and it is read when a run needs it
(Journal.reload). A frame's write drops the released rows it made or restored
that no entry names any more; evicting a frame drops its released rows
(and so do the rows a crash left behind).

Not covered (a known gap): an object of a project module that a restored
statement changed through a call (a registry a helper appends to, without
rebinding it) is as the new process imported it. A statement that runs
again after the restart and reads it sees the import-time object, where
the old kernel would have seen the changed one. Only `global` rebinding
is tracked as module state (modstate.py).

Restoring (Journal.restore) rehydrates a frame that has never run on this
kernel: matching statements get entries with fresh stamps and signatures
computed from the restored entries, so rerun_set sees a valid cache and
decides the rest as after any edit. A statement is restored only with all
its local definers. The ids a recompute names lose their entries first.

Writing happens in the kernel's idle time (the kernel calls ``idle`` when no
request came for IDLE_SECONDS after a result was sent), one frame per call,
and during a long run: when a statement finishes and the run has gone on
for CHECKPOINT_SECONDS since it started or since the last such write, the
frame is written as it stands (``finished``), so a crash in the middle of
a run loses at most the last CHECKPOINT_SECONDS of finished statements. A
run shorter than that (a keystroke's) is written in idle time only.

What a statement read from outside (reads.py) is part of what is kept:
the interpreter identity is in the row key, and each record carries the
files its statement read (path, size, mtime_ns, digest); a record whose
files changed is not restored (it runs again, and its dependents).

Storage: SQLite through the stdlib (every kernel of a project writes its own
frames; WAL mode and a busy timeout let them share one file, which a
bbolt file owned by the Go process would not without a round trip of every
value through the kernel protocol). ``.ripple/values.db``; the server sets
RIPPLE_VALUES_DB only for `ripple serve` (no journal in batch runs and
tests without a state directory). A per-project budget evicts the least
recently used frames. A damaged or foreign file is moved aside
(``values.db.corrupt-TIME``) with one line in the kernel log, and a new one
is made: the journal never stops a kernel.

Threads: everything here belongs to the kernel's main thread, like the
rest of the engine, except the database writes. The main thread reads the
frame's objects and pickles them (they are only consistent between
requests); the rows go to a writer thread (journalwriter.Writer) through a queue, with
a connection of its own, because a commit, and now and then a WAL
checkpoint with its fsync, may take milliseconds, during which sqlite3
releases the GIL and a request is served on the main thread.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import secrets
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import journaldefs, keptoutput, nested, reads
from .effects import object_key
from .frame import DELETED, RELEASED, Entry, Frame
from .journalwriter import Writer
from .objects import immutable
from .plan import IMPORT, LOCAL, PARAM, Plan

if TYPE_CHECKING:
    from .runner import Runner

Bindings = Tuple[Tuple[str, object], ...]
# A statement's row in a frame's pickle: [content key, expression id,
# stamp, update, returned, bindings, value, call, reads (reads.Reads),
# output (keptoutput.Items), its released bindings (Entry.released, or
# None)]. Any: what the file
# holds is the journal's wire, read back as it was written.
Record = List[Any]
# A mutation log item in the pickle: (object, creator id, [(mutator id, stamp)]).
LogItem = Tuple[object, str, List[Tuple[str, int]]]
# A released value's row (overwritten.py): {"obj": the value, "token": the
# Journal.token of the process that wrote it, "mutlog": [LogItem] of the
# value and what it directly holds}.
Payload = Dict[str, Any]
Log = Callable[[str], object]

ENV_PATH = "RIPPLE_VALUES_DB"
ENV_IDLE = "RIPPLE_VALUES_IDLE_MS"  # idle time before a write; 0: right after the result, waited for
ENV_BUDGET = "RIPPLE_VALUES_BUDGET"  # bytes kept per project
FORMAT = "ripple-values-1"
STATEMENT_CAP = 8 << 20
FRAME_CAP = 64 << 20
DEFAULT_BUDGET = 1 << 30
# A released value larger than this (pickled) is not written: the cache
# keeps it (overwritten.py).
RELEASE_CAP = 256 << 20
IDLE_SECONDS = 0.15
# A run's finished statements are written at most this long after they
# finish (a crash loses at most that), unless pickling the frame took
# longer: then the next write waits CHECKPOINT_FACTOR times that, so
# checkpoints cost a run at most about 1/CHECKPOINT_FACTOR of its time
# (bench/durable/statements.py measures it).
CHECKPOINT_SECONDS = 0.1
CHECKPOINT_FACTOR = 20


class _Deleted:
    """Stands for DELETED (a binding's "the name was unbound" mark, which
    is compared by identity) in the pickle: a class pickles by reference
    and comes back as itself."""


class _Released:
    """Stands for RELEASED (a binding or value let go of: overwritten.py)
    in the pickle, as _Deleted does for DELETED."""


def _dumps(obj: object) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _out_value(v: object, ns: Dict[str, object]) -> object:
    if v is RELEASED:
        return _Released
    return _Deleted if v is DELETED else journaldefs.out_value(v, ns)


def _out(bindings: Bindings, ns: Dict[str, object]) -> Bindings:
    """bindings as the journal writes them; ns: the frame's namespace
    (journaldefs.py)."""
    return tuple((n, _out_value(v, ns)) for n, v in bindings)


def _in(bindings: Bindings) -> Bindings:
    return tuple((n, DELETED if v is _Deleted else RELEASED if v is _Released else v) for n, v in bindings)


def _hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def remap_log(frame: Frame, items: Iterable[LogItem], old_to_new_id: Dict[str, str],
              stamp_of: Dict[str, Tuple[int, int]]) -> None:
    """Put items of another process's mutation log into the frame's, in
    this process's ids and stamps: a mutation by a statement not restored
    (or by another stamp of it) gets stamp 0, which no entry has, so the
    object counts as dirty."""
    log = frame.mutlog
    for obj, creator, mutations in items:
        new = []
        for mid, old_stamp in mutations:
            s = stamp_of.get(mid)
            new.append((old_to_new_id.get(mid, "journal:" + mid), s[1] if s is not None and s[0] == old_stamp else 0))
        log[object_key(obj)] = [obj, old_to_new_id.get(creator, "journal:" + creator), new]


def from_env(log: Log) -> Optional[Journal]:
    """The journal the environment asks for, or None."""
    path = os.environ.get(ENV_PATH)
    if not path:
        return None
    try:
        budget = int(os.environ.get(ENV_BUDGET) or DEFAULT_BUDGET)
    except ValueError:
        budget = DEFAULT_BUDGET
    try:
        idle = int(os.environ.get(ENV_IDLE)) / 1000.0  # type: ignore[arg-type]  # None: TypeError, as intended
    except (TypeError, ValueError):
        idle = IDLE_SECONDS
    return Journal(path, budget, max(idle, 0.0), log)


class Journal:
    """The value journal of one kernel (the module doc)."""

    def __init__(self, path: str, budget: int, idle: float, log: Log) -> None:
        self.path = path
        self.budget = budget
        self.idle_seconds = idle
        self.log = log
        self.db: Optional[sqlite3.Connection] = None
        self._ino: Optional[int] = None  # the inode of the file this kernel opened
        self.broken = False  # the file cannot be used at all: journal off
        # id(frame) -> frame: frames whose cache changed since written.
        self.pending: Dict[int, Frame] = {}
        self.writer = Writer(self)
        # Names this process's released values (overwritten.py): their
        # mutation logs are in its ids and stamps.
        self.token = secrets.token_hex(8)
        self._unflushed = False  # released values handed to the writer since the last flush
        # time.monotonic() before which no run writes a checkpoint
        # (finished): a run shorter than CHECKPOINT_SECONDS (a keystroke's)
        # is written in idle time only, off its path.
        self._next_checkpoint = 0.0

    # -- the file -------------------------------------------------------------------

    def _open(self) -> Optional[sqlite3.Connection]:
        if self.db is not None or self.broken:
            return self.db
        try:
            self.db = self._connect()
        except (sqlite3.DatabaseError, ValueError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                return None  # busy: try again later
            self._move_aside(exc)
            try:
                self.db = self._connect()
            except (sqlite3.Error, OSError, ValueError) as exc:
                self.broken = True
                self.log("value journal %s unusable, values are not kept: %s" % (self.path, exc))
        except OSError as exc:
            self.broken = True
            self.log("value journal %s unusable, values are not kept: %s" % (self.path, exc))
        return self.db

    def _connect(self) -> sqlite3.Connection:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        try:
            self._ino = os.stat(self.path).st_ino
        except OSError:
            self._ino = None
        db = sqlite3.connect(self.path, timeout=2.0, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if tables and "ripple_meta" not in tables:
                raise ValueError("not a ripple value journal (tables %s)" % ", ".join(sorted(tables)))
            db.execute("CREATE TABLE IF NOT EXISTS ripple_meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS frames(key TEXT PRIMARY KEY, keys BLOB NOT NULL, data BLOB NOT NULL,"
                " size INTEGER NOT NULL, used REAL NOT NULL)"
            )
            # Values let go of from the cache (overwritten.py), by key; a
            # frame's rows go with it.
            db.execute(
                "CREATE TABLE IF NOT EXISTS released(key TEXT PRIMARY KEY, frame TEXT NOT NULL, data BLOB NOT NULL,"
                " size INTEGER NOT NULL)"
            )
            db.execute("INSERT OR IGNORE INTO ripple_meta VALUES('format', ?)", (FORMAT,))
            row = db.execute("SELECT v FROM ripple_meta WHERE k='format'").fetchone()
            if row is None or row[0] != FORMAT:
                raise ValueError("value journal of another format: %r" % (row and row[0],))
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, exc: BaseException) -> None:
        """Keep a damaged or foreign file as values.db.corrupt-TIME. Only
        the file this kernel found bad: another kernel of the project may
        have moved it and made a new one already."""
        try:
            if self._ino is None or os.stat(self.path).st_ino != self._ino:
                return
            to = "%s.corrupt-%s" % (self.path, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
            os.rename(self.path, to)
            self.writer.put(("reopen",))
            for suffix in ("-wal", "-shm"):
                try:
                    os.remove(self.path + suffix)
                except OSError:
                    pass
            self.log("value journal %s is damaged or not ripple's (%s): moved aside to %s" % (self.path, exc, to))
        except OSError:
            pass

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until what was handed to the writer is written."""
        self.writer.flush(timeout)

    # -- released values (overwritten.py) -------------------------------------------

    def release(self, frame_key: str, payload: Payload) -> Optional[str]:
        """Hand a released value's row to the writer; returns its key, or
        None when it cannot be kept (it does not pickle, is larger than
        RELEASE_CAP, the file is unusable): then the cache keeps it."""
        if self._open() is None:
            return None
        try:
            data = _dumps(payload)
        except Exception:  # a value's __reduce__ may raise anything
            return None
        if len(data) > RELEASE_CAP:
            return None
        key = secrets.token_hex(16)
        self.writer.put(("released", key, frame_key, data))
        self._unflushed = True
        return key

    def reload(self, key: str) -> Optional[Payload]:
        """A released value's row (a new object each time), or None when
        it is gone (evicted, the file moved aside) or does not load."""
        if self._unflushed:
            self._unflushed = False
            self.writer.flush(10.0)
        db = self._open()
        if db is None:
            return None
        try:
            row = db.execute("SELECT data FROM released WHERE key=?", (key,)).fetchone()
            if row is None:
                return None
            payload = pickle.loads(row[0])
        except Exception as exc:
            self.log("value journal: released value %s not read: %s: %s" % (key, type(exc).__name__, exc))
            return None
        return payload if isinstance(payload, dict) else None

    def close(self) -> None:
        self.writer.stop(5.0)
        if self.db is not None:
            self.db.close()
            self.db = None

    # -- keys -------------------------------------------------------------------------

    @staticmethod
    def frame_key(frame: Frame, plan: Plan) -> Optional[Tuple[str, str]]:
        """(row key, argument hash), or None when the frame is not journalled."""
        params = frame.params
        if any(not immutable(v) for v in params.values()):
            return None
        try:
            args = hashlib.sha256(pickle.dumps(sorted(params.items()), protocol=4)).hexdigest() if params else ""
        except Exception:
            return None
        # The interpreter and its packages are part of the key: values of
        # another interpreter are not this one's (reads.identity).
        return _hash(FORMAT, reads.identity(), plan.module, plan.qualname, args), args

    @staticmethod
    def content_keys(runner: Runner, plan: Plan, args: str) -> List[str]:
        """The content key of every statement of plan (module doc)."""
        keys: List[str] = []
        seen: Dict[str, int] = {}
        for ps in plan.stmts:
            parts = [ps.info.key, "|".join(ps.dep_names)]
            for name, kind, ref in ps.deps:
                if kind == LOCAL:
                    parts.append(keys[ref])  # type: ignore[index]  # a LOCAL dep's ref is an index
                elif kind == PARAM:
                    parts.append("param:" + args)
                elif kind == IMPORT:
                    parts.append("import:" + repr(tuple(runner.engine.modules.module_hash(m) for m in ref)))  # type: ignore[union-attr]  # an IMPORT dep's ref is module names
                else:
                    parts.append("global:" + repr(runner.global_version(plan.module, name)))
            text = "\0".join(parts)
            n = seen.get(text, 0)
            seen[text] = n + 1
            keys.append(hashlib.blake2b(("%d\0%s" % (n, text)).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest())
        return keys

    # -- restoring --------------------------------------------------------------------

    def restore(self, runner: Runner, frame: Frame, plan: Plan, invalidate: Union[None, str, Sequence[str]]) -> int:
        """Rehydrate the cache of a frame new to this kernel; returns the
        number of statements restored."""
        if invalidate == "all" or frame.cache:
            return 0
        fk = self.frame_key(frame, plan)
        if fk is None:
            return 0
        db = self._open()
        if db is None:
            return 0
        try:
            row = db.execute("SELECT keys, data FROM frames WHERE key=?", (fk[0],)).fetchone()
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, sqlite3.OperationalError):
                # Damaged inside (a malformed page): aside, and a new file.
                self.db = None
                db.close()
                self._move_aside(exc)
            return 0
        if row is None:
            return 0
        # The project modules its statements import, loaded as its run
        # would load them: their versions are in the keys, and a module not
        # loaded yet has none (unpickling the values imports them anyway).
        for ps in plan.stmts:
            for _, kind, ref in ps.deps:
                if kind == IMPORT:
                    for m in ref:  # type: ignore[union-attr]  # an IMPORT dep's ref is module names
                        runner.engine.modules.ensure(m)
        cks = self.content_keys(runner, plan, fk[1])
        try:
            stored_keys = pickle.loads(row[0])
        except Exception:
            return 0
        if not stored_keys.intersection(cks):
            return 0
        try:
            # Unpickling imports the modules of the values' classes, as
            # the statements' own run would.
            data = pickle.loads(row[1])
            records, mutlog = data["stmts"], data["mutlog"]
        except Exception as exc:
            self.log("value journal: frame %s:%s not restored: %s" % (plan.module, plan.qualname, exc))
            return 0
        try:
            chosen = self._rehydrate(runner, frame, plan, cks, records, mutlog, invalidate)
        except Exception as exc:
            # Never a run broken by the journal: the frame starts empty.
            frame.cache.clear()
            frame.mutlog.clear()
            self.log("value journal: frame %s:%s not restored: %s: %s" % (plan.module, plan.qualname, type(exc).__name__, exc))
            return 0
        if not chosen:
            return 0
        self.writer.put(("touch", fk[0]))
        return chosen

    @staticmethod
    def _rehydrate(runner: Runner, frame: Frame, plan: Plan, cks: List[str], records: List[Record],
                   mutlog: List[LogItem], invalidate: Union[None, str, Sequence[str]]) -> int:
        """Entries (and the mutation log) for the statements of plan whose
        content key is among the records, with all their local definers
        (module doc); returns how many."""
        engine = runner.engine
        by_ck = {r[0]: r for r in records}
        dropped = set(invalidate or ())
        stmts = plan.stmts
        chosen = {}  # index -> (record, call, methodCall)
        for ps, ck in zip(stmts, cks):
            r = by_ck.get(ck)
            if r is None or ps.id in dropped:
                continue
            if len(r) > 8 and r[8] and not reads.current(r[8]):
                continue  # a file it read changed: it runs again (reads.py)
            if any(kind == LOCAL and ref not in chosen for _, kind, ref in ps.deps):
                continue
            r = journaldefs.restore(r, ps, frame.namespace, plan.filename,
                                    plan.module if frame.script_globals is None else "__main__")
            if r is None:
                continue  # a function of the frame it cannot define again
            call = r[7]
            pointer = None
            if "methodCall" in r[3]:
                # The callee, as this process has it, must still be the
                # project function the update names (as a run would say).
                pointer = engine.method_pointer(call[0]) if call is not None else None
                if pointer is None or pointer != r[3]["methodCall"].get("methodPointer"):
                    continue
            elif call is not None:
                call = None  # not a project function's call: nothing enters it
            chosen[ps.index] = (r, call, pointer)
        if not chosen:
            return 0
        old_to_new_id = {}
        stamp_of = {}  # old id -> (old stamp, new stamp)
        cache = frame.cache
        for i in sorted(chosen):
            ps = stmts[i]
            r, call, pointer = chosen[i]
            _, old_id, old_stamp, update, returned, bindings, value = r[:7]
            stamp = engine.next_stamp()
            old_to_new_id[old_id] = ps.id
            stamp_of[old_id] = (old_stamp, stamp)
            update = dict(update)
            update["expressionId"] = ps.id
            nested.moved(update, ps.range)
            update["range"] = ps.range
            update["fromCache"] = False
            if pointer is not None:
                update["methodCall"] = {"methodPointer": pointer}
            e = cache[ps.id] = Entry(ps.info.key, ps.dep_names, None, stamp, _in(bindings), update,
                                     RELEASED if value is _Released else value, returned, call)
            if len(r) > 10 and r[10]:
                e.released = dict(r[10])
                frame.released.add(ps.id)
                frame.released_rows.update(e.released.values())
            if len(r) > 8 and r[8]:
                reads.record(frame, ps.id, stamp, r[8])
            if len(r) > 9 and r[9]:
                keptoutput.record(frame, ps.id, stamp, r[9])
        for i in chosen:
            ps = stmts[i]
            cache[ps.id].sig = runner.current_sig(plan, ps, frame)
        # The mutation log, in this process's ids and stamps (remap_log).
        frame.journal_remap = (old_to_new_id, stamp_of)
        remap_log(frame, mutlog, old_to_new_id, stamp_of)
        # What each restored statement saw of the mutations through calls
        # (mutation.seen_mutations), as the restored log says for this
        # layout: an edit that later moves a statement across such a
        # mutation is seen as for an entry of this process.
        layout = runner.layout(frame, plan)
        for i in chosen:
            e = cache[stmts[i].id]
            e.seen = runner.seen_mutations(plan, frame, i)
            e.layout = layout
        return len(chosen)

    # -- writing ----------------------------------------------------------------------

    def changed(self, frame: Frame) -> None:
        """The frame's cache changed: write it when the kernel is idle."""
        self.pending[id(frame)] = frame

    def run_started(self) -> None:
        """A run of a journalled frame starts (finished's clock)."""
        self._next_checkpoint = time.monotonic() + CHECKPOINT_SECONDS

    def finished(self, frame: Frame, runner_factory: Callable[[], Runner]) -> None:
        """A statement of the frame finished in a run: write the frame now
        when the last write is CHECKPOINT_SECONDS old (a crash in the
        middle of a long run loses at most that; the module doc). The
        pickle is made here, between statements, where the objects are
        consistent; the database write is the writer thread's."""
        now = time.monotonic()
        if now < self._next_checkpoint:
            return
        self._next_checkpoint = now + CHECKPOINT_SECONDS  # also when the write fails
        try:
            self.write(runner_factory(), frame)
        except Exception as exc:  # a value's __reduce__ may raise anything
            self.log("value journal: frame not written: %s: %s" % (type(exc).__name__, exc))
        took = time.monotonic() - now
        self._next_checkpoint = max(self._next_checkpoint, now + took * CHECKPOINT_FACTOR)

    def idle(self, runner_factory: Callable[[], Runner], arrived: Optional[Callable[[], bool]] = None) -> bool:
        """Write one pending frame; returns whether more are pending. A
        write that arrived() interrupts (a request came: it comes first)
        stays pending."""
        if not self.pending:
            return False
        key = next(iter(self.pending))
        frame = self.pending.pop(key)
        try:
            written = self.write(runner_factory(), frame, arrived)
            if written is None:
                self.pending.setdefault(key, frame)
            elif written and self.idle_seconds == 0:
                # RIPPLE_VALUES_IDLE_MS=0 (tests): the row is on disk before
                # the next request is read, so its reply says it is.
                self.writer.flush(5.0)
        except Exception as exc:  # a value's __reduce__ may raise anything
            self.log("value journal: frame not written: %s: %s" % (type(exc).__name__, exc))
        return bool(self.pending)

    def write(self, runner: Runner, frame: Frame, arrived: Optional[Callable[[], bool]] = None) -> Optional[bool]:
        """Hand the frame's row to the writer: True if handed, False if
        the frame is not journalled, None if arrived() said to stop
        (between the phases: keys, pickle)."""
        plan = frame.plan
        if plan is None or frame.gwriters or frame.gbase or not frame.cache:
            return False
        fk = self.frame_key(frame, plan)
        if fk is None:
            return False
        cks = self.content_keys(runner, plan, fk[1])
        skip = frame.journal_skip
        for k in [k for k, stamp in skip.items() if k not in frame.cache or frame.cache[k].stamp != stamp]:
            del skip[k]
        records: Dict[str, Record] = {}
        read_table, kept_table = reads.table(frame), keptoutput.table(frame)
        for ps, ck in zip(plan.stmts, cks):
            e = frame.cache.get(ps.id)
            if e is None or e.key != ps.info.key or e.dep_names != ps.dep_names or e.gwrites or ps.id in skip:
                continue
            if e.sig != runner.current_sig(plan, ps, frame):
                continue  # stale: the next run replaces it
            big = e.value is not RELEASED and journaldefs.too_big(e.value, STATEMENT_CAP)
            for _, v in e.bindings:
                big = big or journaldefs.too_big(v, STATEMENT_CAP)
            if big:
                skip[ps.id] = e.stamp
                continue
            rs = reads.of_table(read_table, ps.id, e.stamp)
            printed = keptoutput.of_table(kept_table, ps.id, e.stamp)
            ns = frame.namespace
            records[ps.id] = [ck, ps.id, e.stamp, e.update, e.returned, _out(e.bindings, ns),
                              _Released if e.value is RELEASED else e.value, journaldefs.out_call(e.call, ns), rs,
                              printed, dict(e.released) if e.released else None]
        mutlog = [(obj, creator, list(muts)) for obj, creator, muts in frame.mutlog.values() if creator is not None]
        if arrived is not None and arrived():
            return None
        blob, kept = self._pickle(plan, frame, records, mutlog)
        if blob is None or kept is None:
            return False
        if arrived is not None and arrived():
            return None
        if self._open() is None:
            return False
        keys = pickle.dumps(frozenset(r[0] for r in kept.values()), protocol=4)
        self.writer.put(("row", fk[0], keys, blob, len(blob) + len(keys)))
        # The frame's released values no entry names any more go.
        used = {k for e in frame.cache.values() if e.released for k in e.released.values()}
        dead = frame.released_rows - used
        if dead:
            frame.released_rows -= dead
            self.writer.put(("gc", frozenset(dead)))
        return True

    def _evict(self, db: sqlite3.Connection, keep: str) -> None:
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM frames").fetchone()[0]
        total += db.execute("SELECT COALESCE(SUM(size), 0) FROM released").fetchone()[0]
        if total <= self.budget:
            return
        for key, size in db.execute("SELECT key, size FROM frames WHERE key != ? ORDER BY used", (keep,)).fetchall():
            db.execute("DELETE FROM frames WHERE key=?", (key,))
            total -= size + db.execute("SELECT COALESCE(SUM(size), 0) FROM released WHERE frame=?", (key,)).fetchone()[0]
            db.execute("DELETE FROM released WHERE frame=?", (key,))
            if total <= self.budget:
                return
        if total > self.budget:
            db.execute("DELETE FROM frames WHERE key=?", (keep,))

    @staticmethod
    def _pickle(plan: Plan, frame: Frame, records: Dict[str, Record],
                mutlog: List[LogItem]) -> Tuple[Optional[bytes], Optional[Dict[str, Record]]]:
        """(one pickle of the records and the mutation log, the records
        in it), or (None, None). Left out: a record whose part does not
        pickle or is larger than STATEMENT_CAP (remembered in
        frame.journal_skip), a record with a local definer left out (it
        would not be restored: restore's rule), and the log of an object
        no record kept holds; the log of an object that does not pickle
        leaves out its creator and its mutators (they run again, making a
        new object)."""

        def close(records: Dict[str, Record]) -> Dict[str, Record]:
            kept: Dict[str, Record] = {}
            for ps in plan.stmts:
                r = records.get(ps.id)
                if r is not None and all(kind != LOCAL or plan.stmts[ref].id in kept for _, kind, ref in ps.deps):  # type: ignore[index]  # a LOCAL dep's ref is an index
                    kept[ps.id] = r
            return kept

        def dump(records: Dict[str, Record], log: Iterable[LogItem]) -> bytes:
            return _dumps({"stmts": list(records.values()), "mutlog": [m for m in log if m[1] in records]})

        records = close(records)
        try:
            blob = dump(records, mutlog)
            if len(blob) <= STATEMENT_CAP:
                return blob, records
        except Exception:
            pass
        out = set()
        for r in records.values():
            try:
                if len(_dumps(r[5:])) > STATEMENT_CAP:
                    out.add(r[1])
            except Exception:
                out.add(r[1])
        for i in out:
            frame.journal_skip[i] = records[i][2]
        kept_log = []
        for item in mutlog:
            try:
                if item[1] in records:
                    _dumps(item[0])
                kept_log.append(item)
            except Exception:
                out.add(item[1])
                out.update(m for m, _ in item[2])
        records = close({k: r for k, r in records.items() if k not in out})
        try:
            blob = dump(records, kept_log)
        except Exception:
            return None, None
        return (blob, records) if len(blob) <= FRAME_CAP else (None, None)
