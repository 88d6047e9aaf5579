"""What the kernel tells the Go side of pytest's items and reports: an
item's scope and JUnit names, and an item's outcome as pytest counts it
(the "end" progress event)."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Sequence, Union

if TYPE_CHECKING:
    import pytest

    from .api import WireObject

Report = Union["pytest.TestReport", "pytest.CollectReport"]


def scope(item: pytest.Item, dist: str = "loadfile") -> str:
    """The group a test runs in. loadfile (the default): its module (its
    file's part of the node id, as xdist's loadfile groups), so that a
    module's and its classes' tests run on one kernel, in pytest's order,
    sharing module state and module- and class-scoped fixtures as they do
    under pytest. loadscope (ripple run --dist loadscope, as xdist's): its
    outermost class, else its module, taken from the collection tree, not
    the node id's text (a parametrize id may hold "::")."""
    module = item.nodeid.split("::", 1)[0]
    if dist != "loadscope":
        return module
    import pytest

    outer = None
    node = item.parent
    while node is not None:
        if isinstance(node, pytest.Class):
            outer = node
        elif isinstance(node, pytest.Module):
            break
        node = node.parent
    return outer.nodeid if outer is not None else module


def junit_names(nodeid: str) -> List[str]:
    """classname and name as pytest's junitxml writes them."""
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(nodeid)
    return [".".join(names[:-1]), names[-1]]


def crash_message(report: Report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    return str(report.longrepr).strip().split("\n")[-1]


def skip_reason(report: Report) -> str:
    if isinstance(report.longrepr, tuple):
        reason = report.longrepr[2]
        if reason.startswith("Skipped: "):
            reason = reason[len("Skipped: "):]
        return reason
    return str(report.longrepr or "")


_PHASE_WORD = {"setup": "at setup", "teardown": "at teardown"}


def outcome(i: int, reports: Sequence[pytest.TestReport]) -> WireObject:
    """An item's reports (setup, call, teardown) as pytest counts them:
    the outcome of the call, error when the setup or the teardown failed,
    skipped/xfailed when the setup skipped."""
    status, message = "", ""
    texts: List[str] = []
    out: List[str] = []
    err: List[str] = []
    sections: List[List[str]] = []
    duration = 0.0
    for rep in reports:
        duration += rep.duration or 0.0
        xfail = hasattr(rep, "wasxfail")
        if rep.failed:
            if rep.when == "call":
                status = "failed" if status != "error" else status
                message = message or crash_message(rep)
                texts.append(rep.longreprtext)
            else:
                status = "error"
                word = _PHASE_WORD[str(rep.when)]
                message = message or "%s: %s" % (word, crash_message(rep))
                texts.append("%s of %s\n%s" % (word.upper(), rep.nodeid, rep.longreprtext))
        elif rep.skipped:
            if rep.when != "teardown" and status != "error":
                status = "xfailed" if xfail else "skipped"
                message = rep.wasxfail if xfail else skip_reason(rep)
        elif rep.when == "call" and status in ("", "passed"):
            status = "xpassed" if xfail else "passed"
            if xfail:
                message = rep.wasxfail
        elif rep.when == "setup" and status == "":
            status = "passed"  # until the call says otherwise
    if reports:
        last = reports[-1]
        for title, content in last.sections:
            sections.append([title, content])
            if "stdout" in title:
                out.append(content)
            elif "stderr" in title:
                err.append(content)
    if not reports:
        status, message = "interrupted", "no report"
    ev: WireObject = {"event": "end", "i": i, "status": status, "duration": duration}
    if status not in ("passed",):
        ev["message"] = message
        if texts:
            ev["longrepr"] = "\n".join(texts)
        if sections:
            ev["sections"] = sections
            ev["stdout"] = "".join(out)
            ev["stderr"] = "".join(err)
    return ev
