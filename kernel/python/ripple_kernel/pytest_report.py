"""What the kernel tells the Go side of pytest's items and reports: an
item's scope and JUnit names, and an item's outcome as pytest counts it
(the "end" progress event)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Sequence, Tuple, Union

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


class JUnitLogging:
    """The ini options pytest's junitxml reads for captured output."""

    __slots__ = ("logging", "log_passing")

    def __init__(self, logging: str = "no", log_passing: bool = True) -> None:
        self.logging = logging  # junit_logging: no, log, system-out, system-err, out-err, all
        self.log_passing = log_passing  # junit_log_passing_tests


def _element(tag: str, message: str, text: str = "", type_: str = "") -> Dict[str, str]:
    e = {"tag": tag, "message": message}
    if text:
        e["text"] = text
    if type_:
        e["type"] = type_
    return e


def _captured(rep: pytest.TestReport, log: JUnitLogging) -> List[Dict[str, str]]:
    """system-out and system-err as pytest's junitxml writes them for one
    report (_NodeReporter.write_captured_output)."""
    if (not log.log_passing and rep.passed) or log.logging == "no":
        return []

    def prepare(content: str, header: str) -> str:
        return "\n".join([header.center(80, "-"), content, ""])

    out: List[Dict[str, str]] = []

    def write(content: str, tag: str) -> None:
        if content:
            out.append({"tag": tag, "text": content})

    content = ""
    if log.logging in ("log", "all"):
        content = prepare(rep.caplog, " Captured Log ")
    if log.logging in ("system-out", "out-err", "all"):
        content += prepare(rep.capstdout, " Captured Out ")
        write(content, "system-out")
        content = ""
    write(content, "system-out")
    if log.logging in ("system-err", "out-err", "all"):
        write(prepare(rep.capstderr, " Captured Err "), "system-err")
    return out


def junit_cases(reports: Sequence[pytest.TestReport], log: JUnitLogging) -> List[List[Dict[str, str]]]:
    """The children of the testcases pytest's junitxml writes for an item's
    reports (LogXML.pytest_runtest_logreport): one testcase, or two when
    the call failed and the teardown failed too (pytest counts 1 failed and
    1 error). Each child: tag (failure, error, skipped, system-out,
    system-err), message, type, text as pytest writes them, and "passed"
    for a call that passed (pytest counts it; no element)."""
    cases: List[List[Dict[str, str]]] = [[]]
    call_failed = False
    for rep in reports:
        cur = cases[-1]
        if rep.passed and rep.when == "call":
            cur.append({"tag": "passed"})  # counted by pytest's junitxml; no element
        elif rep.failed:
            if rep.when == "teardown" and call_failed:
                cases.append([])
                cur = cases[-1]
            crash = getattr(rep.longrepr, "reprcrash", None)
            reason = crash.message if crash is not None else str(rep.longrepr)
            if rep.when == "call":
                call_failed = True
                if hasattr(rep, "wasxfail"):
                    cur.append(_element("skipped", "xfail-marked test passes unexpectedly"))
                else:
                    cur.append(_element("failure", reason, str(rep.longrepr)))
                if not log.log_passing:
                    cur.extend(_captured(rep, log))
            else:
                cur.append(_element("error", 'failed on %s with "%s"' % (rep.when, reason), str(rep.longrepr)))
        elif rep.skipped:
            if hasattr(rep, "wasxfail"):
                why = str(rep.wasxfail)
                cur.append(_element("skipped", why[8:] if why.startswith("reason: ") else why, type_="pytest.xfail"))
            elif isinstance(rep.longrepr, tuple):
                filename, lineno, why = rep.longrepr
                why = why[9:] if why.startswith("Skipped: ") else why
                cur.append(_element("skipped", why, "%s:%s: %s" % (filename, lineno, why), "pytest.skip"))
            else:
                cur.append(_element("skipped", str(rep.longrepr), type_="pytest.skip"))
            cur.extend(_captured(rep, log))
        if rep.when == "teardown":
            cur.extend(_captured(rep, log))
            # record_property: the testcase's <properties> (pytest adds
            # them with the teardown's report).
            cur.extend({"tag": "property", "message": str(n), "text": str(v)} for n, v in rep.user_properties)
    return cases


def outcome(
    i: int, reports: Sequence[pytest.TestReport], log: JUnitLogging = JUnitLogging(),
    recorded: Sequence[Dict[str, str]] = (),
) -> WireObject:
    """An item's reports (setup, call, teardown) as pytest counts them:
    the outcome of the call, error when the setup or the teardown failed,
    skipped/xfailed when the setup skipped. recorded: JUnit children the
    test recorded through pytest_session.WorkerXML (its first testcase's)."""
    status, message = "", ""
    teardown_error: Tuple[str, str] = ("", "")  # after a failed call: pytest counts it apart
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
                word = _PHASE_WORD[str(rep.when)]
                if status == "failed" and rep.when == "teardown":
                    teardown_error = ("%s: %s" % (word, crash_message(rep)), rep.longreprtext)
                    texts.append("%s of %s\n%s" % (word.upper(), rep.nodeid, rep.longreprtext))
                    continue
                status = "error"
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
    if teardown_error[0]:
        ev["teardownError"] = teardown_error[0]
    cases = junit_cases(reports, log)
    cases[0][:0] = recorded
    if cases != [[{"tag": "passed"}]]:
        ev["junit"] = cases
    if status not in ("passed",):
        ev["message"] = message
        if texts:
            ev["longrepr"] = "\n".join(texts)
        if sections:
            ev["sections"] = sections
            ev["stdout"] = "".join(out)
            ev["stderr"] = "".join(err)
    return ev
