"""Split collection (the "ripple-split" plugin of pytest_plugin): each
kernel of a run collects (imports) only its share of the test modules. Which
share a module is in is decided before anything is imported, the same
way on every kernel of the run:

  - a pre-pass (_plan) lists the candidate test files as pytest would
    find them (config.args: the command line's paths or the ini's
    testpaths; python_files; norecursedirs, --ignore, dot directories)
    and deals them out by size, largest first to the least loaded share;
  - a test module the pre-pass did not foresee goes to the share its
    relative path hashes to (FNV-1a), as the Go side's Shard does.

pytest's own collection does the rest: the hook pytest_pycollect_makemodule
answers, for a test module of another share, a Module that collects
nothing (_elsewhere_class), so it is never imported; directories, packages'
__init__.py and conftest.py are collected by every kernel as before (the
conftest chain, fixtures and hooks are the same everywhere). Every kernel
still walks the whole tree, so each one sees the same File collectors in
the same order: that order (files, with each file's owning share, -1
when every kernel collects it) is what the Go side merges the kernels'
items by, and what it checks the kernels agree on.

The split is off (the kernel collects everything, answer "off") when an
option needs the whole collection (_split_unsafe). A collection the Go
side cannot merge in pytest's order (a hook that reordered items, answer
"unsafe") makes it collect everything again.

The hand-over (selected, the collect request's "select") is the default
run's other way for a kernel to collect less: the first kernel collected
the whole suite, with pytest's deselection (-k, -m, --deselect, addopts);
a later kernel is handed the test files (or, for part of a file, the node
ids) of the tests it may run, and its session collects the user's
arguments as pytest would but skips, inside pytest's own traversal, the
test files not handed (HandOver): every conftest.py pytest would load is
loaded, only the handed modules are imported, and -k, -m and the plugins'
hooks apply again (to the same items, so they keep them).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Type, TypeVar

if TYPE_CHECKING:
    import pathlib

    import pytest

    from .api import WireObject

F = TypeVar("F", bound=Callable[..., object])

try:
    from pluggy import HookimplMarker

    hookimpl = HookimplMarker("pytest")
except ImportError:  # no pytest (and so no pluggy): the unittest path

    def hookimpl(**opts: bool) -> Callable[[F], F]:
        return lambda f: f


def fnv1a(text: str) -> int:
    """FNV-1a 64 of text's UTF-8 bytes: the Go side's Shard hash."""
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# Plugins that reorder or select items across modules (so one kernel's
# share cannot tell where its items go in the whole), or that make a
# test's outcome depend on tests of other modules run in the same session.
_REORDERING_PLUGINS = ("randomly", "pytest_randomly", "random_order", "pytest_random_order",
                       "order", "pytest_order", "ordering", "pytest_ordering",
                       "dependency", "pytest_dependency", "reverse", "pytest_reverse")


def _split_unsafe(config: pytest.Config) -> str:
    """Why this session must collect every test module, or ""."""
    if config.pluginmanager.is_blocked("ripple-split"):
        # The user's way to turn it off: -p no:ripple-split (on the
        # command line after --, or in the ini file's addopts).
        return "-p no:ripple-split"
    opt = config.option
    if getattr(opt, "collectonly", False):
        return "--collect-only lists the whole collection"
    if getattr(opt, "doctestmodules", False):
        return "--doctest-modules imports every module"
    if getattr(opt, "keepduplicates", False):
        return "--keep-duplicates"
    for name, flag in (("lf", "--last-failed"), ("failedfirst", "--failed-first"), ("newfirst", "--new-first"),
                       ("stepwise", "--stepwise"), ("stepwise_skip", "--stepwise-skip")):
        if getattr(opt, name, False):
            # They select or reorder by what the whole last run did (and
            # --lf runs everything when none of the selection failed).
            return flag + " needs the whole collection"
    if getattr(opt, "pyargs", False):
        return "--pyargs: the paths are module names"
    for name in _REORDERING_PLUGINS:
        if config.pluginmanager.hasplugin(name):
            return "plugin %s reorders the whole collection" % name
    return ""


@contextmanager
def selected(config: pytest.Config, select: Optional[Sequence[object]]) -> Iterator[None]:
    """While the session collects, it collects only the hand-over's
    selection (node ids and test files relative to rootdir, as the first
    kernel's node ids are) out of what the user's arguments (or testpaths)
    collect: the session walks the same directories as pytest would, so
    it loads the same conftest.py files (their import side effects,
    fixtures, hooks, sys.path changes), but a test module not handed is
    never imported (HandOver). Without a selection (None or empty),
    nothing changes."""
    if not select:
        yield
        return
    hand = HandOver(str(config.rootpath), select)
    saved = config.args
    # An argument naming a node (path::name) of a file not handed would
    # find nothing there: pytest's "not found" usage error. It is left
    # out; its file's directories are still walked for the other arguments.
    invocation = str(config.invocation_params.dir)
    config.args = [a for a in saved if "::" not in str(a)
                   or os.path.normpath(os.path.join(invocation, str(a).split("::", 1)[0])) in hand.files]
    config.pluginmanager.register(hand, "ripple-handover")
    try:
        yield
    finally:
        config.pluginmanager.unregister(hand)
        config.args = saved


class HandOver:
    """The plugin ("ripple-handover") that narrows a session's collection
    to a hand-over, inside pytest's own traversal: a test file not handed
    is ignored (pytest_ignore_collect) after pytest has loaded its
    directory's conftest.py, a module named on the command line but not
    handed collects nothing, and of a file handed only in part (node ids)
    the other items are left out after pytest's deselection."""

    def __init__(self, root: str, select: Sequence[object]) -> None:
        self.files: Set[str] = set()  # absolute paths of the handed test files
        self.partial: Dict[str, Set[str]] = {}  # file node id -> its handed node ids (a file handed in part)
        whole: Set[str] = set()
        for s in select:
            rel, sep, _ = str(s).partition("::")
            self.files.add(os.path.normpath(os.path.join(root, rel)))
            if sep:
                self.partial.setdefault(rel, set()).add(str(s))
            else:
                whole.add(rel)
        for rel in whole:
            self.partial.pop(rel, None)

    def handed(self, path: object) -> bool:
        return os.path.basename(str(path)) in ("__init__.py", "conftest.py") or str(path) in self.files

    @hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: pathlib.Path) -> Optional[bool]:
        # Directories are walked (their conftest.py files load as under
        # pytest); pytest asks this after loading the file's conftests.
        if self.handed(collection_path) or os.path.isdir(collection_path):
            return None
        return True

    @hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: pathlib.Path, parent: pytest.Collector) -> Optional[pytest.Module]:
        # A file named on the command line is collected without asking
        # pytest_ignore_collect.
        if self.handed(module_path):
            return None
        return _elsewhere_class().from_parent(parent, path=module_path)

    @hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: List[pytest.Item]) -> None:
        if not self.partial:
            return
        kept = [it for it in items if it.nodeid.split("::", 1)[0] not in self.partial
                or it.nodeid in self.partial[it.nodeid.split("::", 1)[0]]]
        found = {it.nodeid for it in kept}
        missing = sorted(n for ids in self.partial.values() for n in ids if n not in found)
        if missing:
            import pytest

            # As pytest fails a run whose node-id argument finds nothing.
            raise pytest.UsageError("not found: " + " ".join(missing) + " (handed to this kernel)")
        items[:] = kept


def _rel(path: object, root: str) -> str:
    return os.path.relpath(str(path), root).replace(os.sep, "/")


def _plan(config: pytest.Config, shares: int) -> Dict[str, int]:
    """The pre-pass: {path relative to rootdir: share} for the candidate
    test files pytest would collect from config.args, dealt out by size."""
    from fnmatch import fnmatch

    root = str(config.rootpath)
    invocation = str(config.invocation_params.dir)
    patterns = config.getini("python_files")
    norecurse = config.getini("norecursedirs")
    ignore = {os.path.abspath(os.path.join(invocation, p)) for p in (config.getoption("ignore", None) or [])}
    ignore_glob = [os.path.abspath(os.path.join(invocation, p)) for p in (config.getoption("ignore_glob", None) or [])]

    def matches(path: str, pats: List[str]) -> bool:
        name = os.path.basename(path)
        return any(fnmatch(path if os.sep in p else name, p) for p in pats)

    def ignored(path: str) -> bool:
        return path in ignore or any(fnmatch(path, g) for g in ignore_glob)

    found: List[Tuple[str, int]] = []
    seen: Set[str] = set()

    def add(path: str) -> None:
        if path not in seen and path.endswith(".py"):
            seen.add(path)
            try:
                found.append((_rel(path, root), os.path.getsize(path)))
            except OSError:
                pass

    for arg in config.args:
        top = os.path.abspath(os.path.join(invocation, str(arg).split("::", 1)[0]))
        if os.path.isfile(top):
            add(top)  # a file named on the command line is collected whatever its name
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not matches(os.path.join(dirpath, d), norecurse)
                                 and not ignored(os.path.join(dirpath, d)) and d != "__pycache__")
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if name not in ("__init__.py", "conftest.py") and matches(path, patterns) and not ignored(path):
                    add(path)
    plan: Dict[str, int] = {}
    load = [0] * shares
    for rel, size in sorted(found, key=lambda f: (-f[1], f[0])):
        share = min(range(shares), key=lambda i: (load[i], i))
        plan[rel] = share
        load[share] += size
    return plan


def _elsewhere_class() -> Type[pytest.Module]:
    import pytest

    if not _ELSEWHERE:

        class Elsewhere(pytest.Module):
            """A test module of another kernel's share: never imported,
            it collects nothing here."""

            def collect(self) -> List[pytest.Item]:
                return []

        _ELSEWHERE.append(Elsewhere)
    return _ELSEWHERE[0]


_ELSEWHERE: List[Type[pytest.Module]] = []  # the class, made once pytest is imported


class Split:
    """The plugin ("ripple-split") that makes a session collect one share
    of the test modules (share, of shares), and records the File
    collectors in the order collection reached them."""

    def __init__(self, config: pytest.Config, share: int, shares: int, only: Optional[List[str]] = None) -> None:
        self.shares = max(1, shares)
        self.off = _split_unsafe(config)
        self.share = -1 if self.off else share
        self.root = str(config.rootpath)
        # only: the node ids of the test modules to collect, instead of
        # the share's (a kernel that takes a module of another kernel's
        # share: work stealing).
        self.only = None if only is None else set(only)
        self.plan: Dict[str, int] = {} if self.off or self.only is not None else _plan(config, self.shares)
        self.decided: Dict[str, int] = {}  # str(module path) -> its share
        self.files: List[str] = []  # File collectors' node ids, in collection order
        self.owners: List[int] = []  # each one's share; -1: every kernel collects it
        self.rank: Dict[str, int] = {}  # file node id -> its index in files
        self.unsafe = ""
        # Files named with a node (path::name) on the command line: every
        # kernel collects them (the Go side reports their items once), as
        # pytest fails the run when it does not find a named node.
        invocation = str(config.invocation_params.dir)
        self.everywhere = {os.path.abspath(os.path.join(invocation, str(a).split("::", 1)[0]))
                           for a in config.args if "::" in str(a)}

    def answer(self) -> WireObject:
        if self.off:
            return {"off": self.off}
        return {"share": self.share, "shares": self.shares, "planned": len(self.plan), "unsafe": self.unsafe}

    def owner(self, module_path: object) -> int:
        key = str(module_path)
        share = self.decided.get(key)
        if share is None:
            rel = _rel(module_path, self.root)
            share = self.plan.get(rel)
            if share is None:
                share = fnv1a(rel) % self.shares
            self.decided[key] = share
        return share

    def rank_of_item(self, item: pytest.Item) -> int:
        import pytest

        f = item.getparent(pytest.File)
        return -1 if f is None else self.rank.get(f.nodeid, -1)

    def rank_of_report(self, nodeid: str) -> Tuple[int, int]:
        """The file a collection report is about (-1: a directory's, or
        the session's) and how many files collection had reached then."""
        r = self.rank.get(nodeid)
        if r is None:
            r = self.rank.get(nodeid.split("::", 1)[0], -1) if "::" in nodeid else -1
        return r, len(self.files)

    # ---- hooks (registered only when the Go side asked for a split)

    @hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path: pathlib.Path, parent: pytest.Collector) -> Optional[pytest.Module]:
        # A package's __init__.py and a conftest.py (when python_files
        # makes it a test module) are every kernel's: they hold fixtures
        # and hooks, and a package's set-up.
        if self.share < 0 or module_path.name in ("__init__.py", "conftest.py") or str(module_path) in self.everywhere:
            return None
        if self.only is not None:
            # A Module is not imported until collected: this one only
            # tells the node id.
            stub = _elsewhere_class().from_parent(parent, path=module_path)
            return None if stub.nodeid in self.only else stub
        if self.owner(module_path) == self.share:
            return None
        return _elsewhere_class().from_parent(parent, path=module_path)

    def pytest_collectstart(self, collector: pytest.Collector) -> None:
        import pytest

        if self.share < 0 or not isinstance(collector, pytest.File) or collector.nodeid in self.rank:
            return
        self.rank[collector.nodeid] = len(self.files)
        self.files.append(collector.nodeid)
        owner = -1
        if isinstance(collector, pytest.Module) and not isinstance(collector, pytest.Package):
            owner = self.decided.get(str(collector.path), -1)
        self.owners.append(owner)

    @hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: List[pytest.Item]
    ) -> Iterator[None]:
        before = {id(it): i for i, it in enumerate(items)} if self.share >= 0 else None
        yield
        if before is None:
            return
        # The Go side puts the kernels' items in pytest's order by file
        # (the collection order above), then by each kernel's order: right
        # when the hooks only deselected. A hook that reordered may have
        # done it by the whole collection (a session-scoped parametrized
        # fixture's grouping, a sort): only one kernel with everything can
        # tell that order.
        last = -1
        for it in items:
            i = before.get(id(it))
            if i is None or i < last:
                self.unsafe = "a pytest_collection_modifyitems hook reordered the items"
                return
            last = i
        for it in items:
            if self.rank_of_item(it) < 0:
                self.unsafe = "item %s is in no file" % it.nodeid
                return
