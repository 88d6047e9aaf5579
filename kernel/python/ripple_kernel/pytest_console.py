"""What the Go side's console needs to print a run as pytest's terminal
reporter would (batch/console_pytest.go): for each report, what pytest's
hooks and its reporter make of it, rendered here by pytest's own code, so
that the console only lays the pieces out in pytest's order.

A report's digest: its category, progress letter, verbose word and markup
(pytest_report_teststatus, plugins included), its duration and phase; for
a failure or an error its section under FAILURES or ERRORS (the "____
headline ____" line, the longrepr, the captured output, as
TerminalReporter.summary_failures/summary_errors write it); its line in the
short test summary (-r), or for a skip the key pytest folds skips by.
Warnings as the reporter records them (message and location). The
console's settings (-r characters, --durations, width, markup) come once
with the collection.

Rendering is best effort: a plugin or a pytest version that breaks it
leaves the digest out, and the Go side prints its own lines for that
test.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, TextIO, cast

from .api import KernelAPI, WireObject

if TYPE_CHECKING:
    import pytest
    from _pytest._io import TerminalWriter
    from _pytest.reports import BaseReport
    from _pytest.terminal import TerminalReporter


class Sink(io.StringIO):
    """A terminal writer's file that is a terminal when the Go side's
    stdout is one: pytest's own rules (--color, PY_COLORS, NO_COLOR,
    FORCE_COLOR, TERM) then decide the markup, as for pytest's stdout."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Discard(Sink):
    """A sink that keeps nothing."""

    def write(self, s: str) -> int:
        return len(s)


class Console:
    """Renders one session's reports (see the module doc)."""

    def __init__(self, config: pytest.Config, tr: TerminalReporter, tty: bool, columns: int) -> None:
        self.config = config
        self.tr = tr
        self.tty = tty
        self.columns = columns
        self.warnings: List[WireObject] = []  # recorded since the last take_warnings
        self.ok = True  # rendering works; off after the first failure
        self.fspaths: Dict[str, str] = {}  # a node id's file part -> the progress line's path

    def writer(self, sink: TextIO) -> TerminalWriter:
        """A terminal writer as pytest's own for its stdout would be."""
        from _pytest.config import create_terminal_writer

        tw = create_terminal_writer(self.config, sink)
        if self.columns > 0:
            tw.fullwidth = self.columns
        return tw

    def settings(self) -> WireObject:
        """What the console lays the run out with."""
        tw = self.writer(Sink(self.tty))
        opt = self.config.option
        return {
            "reportchars": str(getattr(self.tr, "reportchars", "")),
            "durations": getattr(opt, "durations", None),
            "durationsMin": float(getattr(opt, "durations_min", 0.005) or 0.0),
            "width": int(tw.fullwidth),
            "markup": bool(tw.hasmarkup),
            "progress": str(self.tr._show_progress_info or ""),
            "noSummary": bool(getattr(opt, "no_summary", False)),
            "tbstyle": str(getattr(opt, "tbstyle", "auto")),
        }

    # ---- warnings

    def record_warning(self, warning_message: Any, nodeid: str) -> None:
        """pytest_warning_recorded: the warning as the terminal reporter
        keeps it (WarningReport: its message and location)."""
        if not self.ok:
            return
        try:
            from _pytest.terminal import WarningReport
            from _pytest.warnings import warning_record_to_str

            wr = WarningReport(fslocation=(warning_message.filename, warning_message.lineno),
                               message=warning_record_to_str(warning_message), nodeid=nodeid)
            self.warnings.append({"message": wr.message, "location": wr.get_location(self.config)})
        except Exception:
            self.ok = False

    def take_warnings(self) -> List[WireObject]:
        out, self.warnings = self.warnings, []
        return out

    # ---- interrupts

    def keyboard_interrupt(self, excinfo: Any) -> str:
        """What pytest's terminal reporter writes of a KeyboardInterrupt
        under its "!!! KeyboardInterrupt !!!" line (its
        _report_keyboardinterrupt): where it landed and the hint, or the
        whole traceback with --full-trace; "" when rendering fails."""
        if not self.ok:
            return ""
        try:
            excrepr = excinfo.getrepr(funcargs=True)
            sink = Sink(self.tty)
            tw = self.writer(sink)
            if getattr(self.config.option, "fulltrace", False):
                excrepr.toterminal(tw)
            else:
                excrepr.reprcrash.toterminal(tw)
                tw.line("(to show a full traceback on KeyboardInterrupt use --full-trace)", yellow=True)
            return sink.getvalue()
        except Exception:
            return ""

    # ---- reports

    def item(self, item: pytest.Item, reports: Sequence[BaseReport]) -> Optional[WireObject]:
        """The digest of an item's reports (setup, call, teardown)."""
        if not self.ok:
            return None
        try:
            return self._item(item.nodeid, item.location, reports)
        except Exception:
            self.ok = False
            return None

    def collect_report(self, report: BaseReport) -> Optional[WireObject]:
        """The digest of a collection report that did not pass."""
        if not self.ok:
            return None
        try:
            return {"fspath": self._fspath(report.nodeid), "reports": [self._report(report, [report])]}
        except Exception:
            self.ok = False
            return None

    def _fspath(self, nodeid: str) -> str:
        """The path the progress line of nodeid's file shows (cached: a
        path computation per test is most of a digest's cost)."""
        part = nodeid.split("::", 1)[0]
        rel = self.fspaths.get(part)
        if rel is None:
            from _pytest.pathlib import bestrelpath

            rel = bestrelpath(self.tr.startpath, self.config.rootpath / part)
            self.fspaths[part] = rel
        return rel

    def _item(self, nodeid: str, location: Any, reports: Sequence[BaseReport]) -> WireObject:
        if getattr(self.config.option, "durations", None) is None:
            # A passed setup or teardown shows nowhere but in --durations
            # (pytest's own hooks give it no category, letter or word; its
            # captured output is in the call's section): left out without
            # asking the hook, which is most of a passing test's cost.
            shown = [r for r in reports if not (r.passed and r.when != "call")]
        else:
            shown = list(reports)
        digests = [self._report(r, reports) for r in shown]
        out: WireObject = {"fspath": self._fspath(nodeid), "reports": digests}
        if self.tr.verbosity > 0:
            out["loc"] = self.tr._locationline(nodeid, *location)
        warnings = self.take_warnings()
        if warnings:
            out["warnings"] = warnings
        return out

    def _report(self, rep: BaseReport, item_reports: Sequence[BaseReport]) -> WireObject:
        config = self.config
        category, letter, word = config.hook.pytest_report_teststatus(report=rep, config=config)
        markup: Optional[Dict[str, bool]] = None
        if isinstance(word, tuple):
            word, markup = word
        names = [k for k, v in (markup or _markup(rep)).items() if v]  # in order: the escape codes' order
        d: WireObject = {"when": rep.when, "cat": category, "letter": letter, "word": word, "markup": names}
        duration = getattr(rep, "duration", None)
        if duration is not None:
            d["duration"] = duration
        if rep.skipped or hasattr(rep, "wasxfail"):
            d["reason"] = _raw_reason(rep)
        if category == "skipped":
            key = self.skip_key(rep)
            if key is not None:
                d["skip"] = key
        section = self._section(rep, str(category), item_reports)
        if section:
            d["section"] = section
        short = self._short(rep, str(category))
        if short is not None:
            d["short"] = short
        return d

    def _section(self, rep: BaseReport, category: str, item_reports: Sequence[BaseReport]) -> str:
        """The report's part of FAILURES, ERRORS or PASSES (-rP), as the
        terminal reporter writes it."""
        tr = self.tr
        tbstyle = self.config.option.tbstyle
        passes = category == "passed" and "P" in tr.reportchars
        if tbstyle == "no" or category not in ("failed", "error") and not passes:
            return ""
        if passes and not rep.sections:
            sink = Sink(self.tty)
            saved = tr._tw
            tr._tw = self.writer(sink)
            try:
                self._teardown_sections(rep.nodeid, item_reports)
            finally:
                tr._tw = saved
            return sink.getvalue()
        sink = Sink(self.tty)
        saved = tr._tw
        tr._tw = self.writer(sink)
        try:
            if category == "failed" and tbstyle == "line":
                tr._tw.line(tr._getcrashline(rep))
                return sink.getvalue()
            msg = tr._getfailureheadline(rep)
            if category == "error":
                msg = "ERROR collecting " + msg if rep.when == "collect" else "ERROR at %s of %s" % (rep.when, msg)
            tr._tw.sep("_", msg, **({"green": True, "bold": True} if passes else {"red": True, "bold": True}))
            tr._outrep_summary(rep)
            if category != "error":
                self._teardown_sections(rep.nodeid, item_reports)
        finally:
            tr._tw = saved
        return sink.getvalue()

    def _teardown_sections(self, nodeid: str, item_reports: Sequence[BaseReport]) -> None:
        """TerminalReporter._handle_teardown_sections over the item's own
        reports (the teardown that passed: category "")."""
        config = self.config
        for r in item_reports:
            if r.when != "teardown" or r.nodeid != nodeid:
                continue
            cat = config.hook.pytest_report_teststatus(report=r, config=config)[0]
            if cat == "":
                self.tr.print_teardown_sections(cast("pytest.TestReport", r))

    def _short(self, rep: BaseReport, category: str) -> Optional[str]:
        """The report's line in the short test summary; for a skip, the
        verbose word (its markup) to which the Go side adds the folded
        count and place."""
        from _pytest import terminal

        config = self.config
        chars = str(getattr(self.tr, "reportchars", ""))
        wanted = {"failed": "f", "error": "E", "passed": "p", "xfailed": "x", "xpassed": "X", "skipped": "s"}.get(category)
        if wanted is None or wanted not in chars:
            return None  # not in this run's short summary
        tw = self.writer(Sink(self.tty))
        if category in ("failed", "error", "passed"):
            color = terminal._color_for_type.get(category, terminal._color_for_type_default)
            return terminal._get_line_with_reprcrash_message(config, rep, tw, {color: True})
        warn = terminal._color_for_type["warnings"]
        if category == "xfailed":
            line = "%s %s" % (tw.markup(rep._get_verbose_word(config), **{warn: True}),
                              terminal._get_node_id_with_markup(tw, config, rep))
            reason = getattr(rep, "wasxfail", "")
            return line + (" - " + str(reason) if reason else "")
        if category == "xpassed":
            return "%s %s %s" % (tw.markup(rep._get_verbose_word(config), **{warn: True}),
                                 terminal._get_node_id_with_markup(tw, config, rep), getattr(rep, "wasxfail", ""))
        if category == "skipped" and isinstance(rep.longrepr, tuple) and len(rep.longrepr) == 3:
            return tw.markup(rep._get_verbose_word(config), **{warn: True})
        return None

    def skip_key(self, rep: BaseReport) -> Optional[List[Any]]:
        """pytest's key for folding a skip in the short summary (_folded_skips)."""
        from _pytest.pathlib import bestrelpath

        if not isinstance(rep.longrepr, tuple) or len(rep.longrepr) != 3:
            return None
        fspath, lineno, reason = rep.longrepr
        rel = bestrelpath(self.tr.startpath, Path(fspath))
        keywords = getattr(rep, "keywords", {})
        if rep.when == "setup" and "skip" in keywords and "pytestmark" not in keywords:
            return [rel, None, reason]
        return [rel, lineno, reason]


def _markup(rep: BaseReport) -> Dict[str, bool]:
    """The terminal reporter's markup for a report's letter and word when
    the hook gave none."""
    was_xfail = hasattr(rep, "wasxfail")
    if rep.passed and not was_xfail:
        return {"green": True}
    if rep.passed and was_xfail or rep.skipped:
        return {"yellow": True}
    if rep.failed:
        return {"red": True}
    return {}


def _raw_reason(rep: BaseReport) -> str:
    from _pytest.terminal import _get_raw_skip_reason

    try:
        return str(_get_raw_skip_reason(cast("pytest.TestReport", rep)))
    except (AssertionError, TypeError, ValueError):
        return ""


# A --collect-only listing longer than this also goes as "console"
# progress frames: the answer is capped (wire.RESULT_CAP, 64 KiB), which
# cut click's 137 KB listing; the Go side takes the frames when there are
# any (the answer's copy, cut, stays for a Go side that does not).
_CONSOLE_INLINE = 32 * 1024
_CONSOLE_CHUNK = 16 * 1024


def send_listing(api: KernelAPI, console: str) -> None:
    """A --collect-only listing as "console" frames, when it is long."""
    if len(console) <= _CONSOLE_INLINE:
        return
    for i in range(0, len(console), _CONSOLE_CHUNK):
        api.emit_progress({"event": "console", "text": console[i:i + _CONSOLE_CHUNK]})
