"""Building a report: one decode-once pass over each capture, and the thin I/O shell around it.

`build_capture_report` opens the capture and runs ONE pass over its records (`ReportPass`): every
record feeds the record summary, and is decoded once (`wirecap.analysis.pipeline.decode_pass`) for
the session statistics, the findings (the format's and the dialects' rules, as `wirecap validate`
finds them) and the conversation. The capture is read again only for what the pass cannot know in
advance: the raw records that findings and notes point at (a read that stops once it has them), and
for HTML the records themselves, streamed into the page.

A part that fails on a capture (a decoder bug) is said so in its section; the parts that come from
the records alone are still shown, and nothing is made up in place of what failed.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from itertools import chain
from typing import Any

from wirecap.analysis import notes as notes_mod
from wirecap.analysis.diff import NothingToCompare, diff_captures
from wirecap.analysis.pipeline import Isolated, decode_pass, drain
from wirecap.analysis.report.compare import Comparison, build_comparison, stats_only
from wirecap.analysis.report.model import (
    MAX_FINDINGS,
    MAX_RELEVANT,
    CaptureReport,
    ConvEntry,
    RecordSummarizer,
    Report,
    bounded_record,
    conversation_from_events,
    redact_shown,
)
from wirecap.analysis.report.thread import Thread, ThreadSink, build_threads
from wirecap.analysis.stats import SessionsSink
from wirecap.analysis.validate import Finding, FormatCheck, RulesSink, sort_findings
from wirecap.capture.reader import CaptureReader
from wirecap.capture.redact import POLICY_NAME, Redactor, needs_redaction, redact_record
from wirecap.dialects import Decoding
from wirecap.errors import WirecapError
from wirecap.events import Event

NO_DECODER = "no decoder for this channel"


def already_redacted(header: dict[str, Any], redactor: Redactor) -> bool:
    """Whether the capture was redacted at write time by at least the rules of `redactor` (then its
    records need no second pass: redaction is idempotent, and skipping it keeps big reports fast)."""
    red = header.get("redaction")
    if not isinstance(red, dict) or not red.get("enabled") or red.get("policy") != POLICY_NAME:
        return False
    return set(redactor.extra_keys) <= set(red.get("extra_keys") or ()) and \
        set(redactor.extra_patterns) <= set(red.get("extra_patterns") or ())


# --- the pass (pure: records in, report parts out) -------------------------------------------------


def _failure(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _no_diff(e: BaseException, paths: list[str]) -> str:
    """Why a report on two captures has no diff; when they have nothing in common, how to compare them
    anyway (`report` has no --ch: `wirecap diff` has)."""
    if isinstance(e, NothingToCompare):
        a, b = (shlex.quote(p) for p in paths)
        return f"{e.reason}; to compare channels you pick: `wirecap diff {a} {b} --ch A:B`"
    return f"diff failed: {_failure(e)}"


class ReportPass:
    """The decoding parts of one capture's report, fed by one `decode_pass`: session statistics
    (`SessionsSink`), findings (`FormatCheck` and `RulesSink`, as `validate_capture`), and the
    conversation (the fold over the pass's events). Each part fails alone (`Isolated`); a failure of
    the decoding itself fails them all. Pure: `run(records)` is given the records."""

    def __init__(self, path: str, header_line: bytes, *, dialect: str | None = None) -> None:
        self.decoding = Decoding(dialect=dialect)
        self.stats = Isolated(SessionsSink(self.decoding))
        self.fmt = Isolated(FormatCheck(path, header_line))
        self.rules = Isolated(RulesSink(self.decoding))
        self.thread = Isolated(ThreadSink(self.decoding))
        self.conversation: tuple[dict[str, list[ConvEntry]], dict[str, int], int] | None = None
        self.conversation_error: Exception | None = None
        self.pass_error: Exception | None = None  # the decoding failed: every part stopped there

    def run(self, records: Iterable[dict[str, Any]]) -> None:
        """One pass over `records`; afterwards the parts' results (or failures) are here."""
        completed = False

        def batches_of_the_pass() -> Iterator[list[Event]]:
            nonlocal completed
            yield from decode_pass(records, self.decoding, [self.stats, self.fmt, self.rules, self.thread])
            completed = True

        batches = batches_of_the_pass()
        try:
            self.conversation = conversation_from_events(chain.from_iterable(batches))
        except Exception as e:  # noqa: BLE001 - a decoder bug must not cost the whole report
            self.conversation_error = e
        try:
            drain(batches)  # (when the fold failed, the pass goes on for the other parts)
        except Exception as e:  # noqa: BLE001 - as above
            self.pass_error = e
        if not completed and self.pass_error is None:  # the decoding failed under the fold
            self.pass_error = self.conversation_error

    def sessions(self) -> tuple[list[dict[str, Any]] | None, str]:
        """(the sessions, or None and why not)."""
        error = self.pass_error or self.stats.error
        if error is None:
            try:
                return self.stats.sink.results(), ""
            except Exception as e:  # noqa: BLE001 - as above
                error = e
        return None, f"statistics failed: {_failure(error)}"

    def threads(self, conversation: dict[str, list[ConvEntry]]) -> tuple[list[Thread] | None, str]:
        """(the session's thread, from the pass's calls and requests and the conversation's entries, or
        None and why not)."""
        error = self.pass_error or self.thread.error
        if error is None:
            try:
                return build_threads(self.thread.sink, conversation), ""
            except Exception as e:  # noqa: BLE001 - as above
                error = e
        return None, f"thread failed: {_failure(error)}"

    def transport(self) -> dict[str, Any] | None:
        """Which transport each LLM call used (`analysis.transport`), when a client used or tried a
        WebSocket for them; None otherwise, or when the rules part failed."""
        if self.pass_error is not None or self.rules.error is not None:
            return None
        return self.rules.sink.transport.shown()

    def findings(self, reader_problems: list[str], unlisted: int, interrupted: str | None,
                 last_seq: int | None) -> tuple[list[Finding] | None, str]:
        """(every finding, as `validate_capture` lists them, or None and why not); the reader's
        problems are known once the records have been read."""
        error = self.pass_error or self.fmt.error or self.rules.error
        if error is None:
            try:
                found = self.rules.sink.findings()
                found += self.fmt.sink.with_reader(reader_problems, unlisted, interrupted, last_seq)
                return sort_findings(found), ""
            except Exception as e:  # noqa: BLE001 - as above
                error = e
        return None, f"validation failed: {_failure(error)}"


class _Summarized:
    """The records, each fed to the record summary on its way to the decoding. The summary comes from
    the records alone, so its failure (a bug) is not a decoding failure: it is kept in `error` and
    raised again once the pass is over, instead of being reported as a failed part."""

    def __init__(self, records: Iterable[dict[str, Any]], feed: Callable[[dict[str, Any]], None]) -> None:
        self.records = iter(records)
        self.feed = feed
        self.error: Exception | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        feed = self.feed
        for rec in self.records:
            try:
                feed(rec)
            except Exception as e:
                self.error = e
                raise
            yield rec


def summarize_and_analyze(report: CaptureReport, records: Iterable[dict[str, Any]], *, dialect: str | None,
                          analysis: ReportPass | None) -> None:
    """The one pass over a capture's records: the record summary into `report`, and with `analysis`
    the decoding parts (its results stay there until `apply_analysis`)."""
    summarizer = RecordSummarizer(report, dialect=dialect)
    fed = _Summarized(records, summarizer.feed)
    if analysis is not None:
        analysis.run(fed)
    if fed.error is not None:
        raise fed.error
    drain(iter(fed))  # the rest of the records, if the decoding stopped early (or there is none)
    summarizer.finish()


# --- what the pass found, into the report (pure) ---------------------------------------------------


def list_findings(report: CaptureReport, found: list[Finding], redactor: Redactor) -> None:
    """The first MAX_FINDINGS findings (texts redacted), and how many of each severity are past them."""
    report.findings = [
        {"severity": f.severity, "rule": f.rule, "message": redactor.text(str(f.message)), "seq": f.seq, "ch": f.ch}
        for f in found[:MAX_FINDINGS]
    ]
    if len(found) > MAX_FINDINGS:
        report.findings_omitted = Counter(f.severity for f in found[MAX_FINDINGS:])
        report.warnings.append(f"only the first {MAX_FINDINGS} of {len(found)} findings are listed "
                               f"(`wirecap validate {report.path}` lists them all)")


def _redact_entries(conv: dict[str, list[ConvEntry]], redactor: Redactor) -> None:
    for entries in conv.values():
        for e in entries:
            e.text = redactor.text(e.text) if e.text else e.text
            if e.input is not None:
                e.input = redactor.value(e.input)


def _no_conversation(report: CaptureReport, unparsed: dict[str, int]) -> None:
    """Say why each channel with messages (or a wire / pipe channel) has no conversation entries."""
    covered = set(report.conversation)
    # A process's pipes are decoded as one unit: the conversation may sit on `proc` or on `stdout`.
    parents_covered = {c.parent for c in report.channels if c.parent and c.ch in covered}
    for c in report.channels:
        if c.ch in covered or (c.parent and c.parent in covered) or c.ch in parents_covered:
            continue
        if not (c.messages or c.transport in ("ws", "http", "pipe")):
            continue
        why = NO_DECODER
        if c.dialect_reason:
            why += f" ({c.dialect_reason})"
        if unparsed.get(c.ch):
            why += f"; {unparsed[c.ch]} message(s) not understood"
        report.conversation_notes[c.ch] = why


def set_conversation(report: CaptureReport, conversation: tuple[dict[str, list[ConvEntry]], dict[str, int], int],
                     redactor: Redactor) -> None:
    conv, unparsed, dropped = conversation
    if not report.pre_redacted:  # events come from the records as written
        _redact_entries(conv, redactor)
    report.conversation = conv
    report.conversation_truncated = dropped
    _no_conversation(report, unparsed)


def apply_analysis(report: CaptureReport, analysis: ReportPass, found: tuple[list[Finding] | None, str],
                   redactor: Redactor) -> None:
    """Sessions, findings and the conversation of the pass into `report` (redacted as shown)."""
    sessions, report.sessions_note = analysis.sessions()
    if sessions is not None:
        report.sessions = redactor.value(sessions) if not report.pre_redacted else sessions
    if analysis.pass_error is None and analysis.rules.error is None:
        report.calls = analysis.rules.sink.transport.calls()
    transport = analysis.transport()
    if transport is not None:
        report.transport = redactor.value(transport) if not report.pre_redacted else transport
    findings, report.findings_note = found
    if findings is not None:
        list_findings(report, findings, redactor)
    if analysis.conversation is None:
        error = analysis.conversation_error or analysis.pass_error
        report.warnings.append(f"decoding failed: {_failure(error) if error else 'no events'}")
        for c in report.channels:
            report.conversation_notes[c.ch] = f"{NO_DECODER} (decoding failed)"
    else:
        set_conversation(report, analysis.conversation, redactor)
        threads, report.threads_note = analysis.threads(report.conversation)
        if threads is not None:
            report.threads = threads if report.pre_redacted else redact_threads(threads, redactor)


def redact_threads(threads: list[Thread], redactor: Redactor) -> list[Thread]:
    """The request side of the threads as it may be shown (the replies come from the conversation's
    entries, redacted already; the requests from the records as written)."""
    if not redactor.enabled:
        return threads
    for th in threads:
        for c in th.calls:
            for p in [*(c.system or ()), *(p for m in c.new for p in m.parts)]:
                p.text = redactor.text(p.text)
            for d in c.tools or ():
                d.description, d.schema = redactor.text(d.description), redactor.text(d.schema)
        for a in th.asides:
            a.text = redactor.text(a.text)
    return threads


def relevant_seqs(report: CaptureReport) -> list[int]:
    """Seqs that findings and notes point at (ranges give their first and last), capped."""
    seqs: list[int] = [f["seq"] for f in report.findings or [] if isinstance(f.get("seq"), int)]
    for n in report.notes:
        if n.seq is not None:
            seqs.append(n.seq)
            if n.seq_end is not None:
                seqs.append(n.seq_end)
    return list(dict.fromkeys(seqs))[:MAX_RELEVANT]


# --- the shell ---------------------------------------------------------------------------------------


def _stream(path: str, redactor: Redactor) -> Iterator[dict[str, Any]]:
    with CaptureReader(path) as reader:
        if already_redacted(reader.header, redactor):
            yield from reader
            return
        for rec in reader:
            yield redact_shown(redactor, rec)


def _lines(path: str) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The records as written, each with its line."""
    with CaptureReader(path) as reader:
        for rec in reader:
            yield rec, reader.line


def _as_shown(redactor: Redactor, pre_redacted: bool) -> Callable[[dict[str, Any], bytes], dict[str, Any]]:
    """A record as it may be shown, given its line: itself when the capture was redacted by these rules or
    the line cannot hold a secret (the recorder's own screen, `needs_redaction`), else redacted."""
    if pre_redacted or not redactor.enabled:
        return _same

    def shown(rec: dict[str, Any], line: bytes) -> dict[str, Any]:
        return redact_record(redactor, rec) if needs_redaction(redactor, rec, line) else rec
    return shown


def _same(rec: dict[str, Any], line: bytes) -> dict[str, Any]:
    return rec


def _add_notes(report: CaptureReport, path: str, last_seq: int, redactor: Redactor) -> None:
    """The capture's notes (redacted: people paste things into notes too), and whether they still fit."""
    probs: list[str] = []
    report.notes = notes_mod.load_notes(path, problems=probs) if path != "-" else []
    if redactor.enabled:
        report.notes = [replace(n, text=redactor.text(n.text), author=redactor.text(n.author)) for n in report.notes]
    report.note_warnings = probs + notes_mod.check_notes(
        report.notes, last_seq, [c.ch for c in report.channels], notes_mod.notes_path(path) if path != "-" else "notes")


def _add_relevant(report: CaptureReport, path: str, redactor: Redactor) -> None:
    """The raw records that findings and notes point at (for markdown's <details>, json): a second
    read of the capture that stops once it has them all."""
    wanted = set(relevant_seqs(report))
    if not wanted or path == "-":
        return
    for rec in _stream(path, redactor):
        if rec.get("seq") in wanted:
            report.relevant[rec["seq"]] = bounded_record(rec)
            if len(report.relevant) == len(wanted):
                break


def build_capture_report(
    path: str,
    *,
    redactor: Redactor | None = None,
    dialect: str | None = None,
    with_analysis: bool = True,
    relevant: bool = True,
    watch: Callable[[CaptureReader], Iterable[dict[str, Any]]] | None = None,
) -> CaptureReport:
    """Everything a report says about one capture (streams the capture; holds only summaries).
    `relevant=False` skips the read of the raw records findings and notes point at (`relevant`:
    what markdown and json show; term and html do not). `watch` (the CLI's progress) is given the
    reader and yields its records on to the pass."""
    if path != "-" and not os.path.exists(path):
        raise WirecapError(f"{path}: no such file")
    redactor = redactor if redactor is not None else Redactor()
    found: tuple[list[Finding] | None, str] = (None, "")
    with CaptureReader(path) as reader:
        report = CaptureReport(path=path, header=reader.header)
        analysis = ReportPass(path, reader.header_line, dialect=dialect) if with_analysis else None
        records = watch(reader) if watch is not None else reader
        summarize_and_analyze(report, records, dialect=dialect, analysis=analysis)
        report.reader_problems = list(reader.problems)
        report.interrupted = reader.interrupted
        last_seq = reader.last_seq
        if analysis is not None:
            found = analysis.findings(reader.problems, reader.unlisted, reader.interrupted, reader.last_seq)
    report.pre_redacted = already_redacted(report.header, redactor)
    if redactor.enabled:
        report.header = redactor.value(report.header)
        for c in report.channels:
            c.label = redactor.text(c.label)
    _add_notes(report, path, last_seq, redactor)
    if analysis is not None:
        apply_analysis(report, analysis, found, redactor)
    else:
        for c in report.channels:
            report.conversation_notes[c.ch] = NO_DECODER
    if relevant:
        _add_relevant(report, path, redactor)
    if path != "-":
        report.iter_records = lambda: _stream(path, redactor)
        report.iter_lines = lambda: _lines(path)
        report.shown = _as_shown(redactor, report.pre_redacted)
    return report


def diff_part(a: str, b: str, redactor: Redactor, sessions: tuple[Any, Any] = (None, None),
              threads: tuple[Any, Any] = ((), ()), full_json: bool = True) -> tuple[dict[str, Any], Comparison]:
    """The diff of two captures as a report shows it: equal or not, the summary rows, the unified view
    (what `wirecap diff A B` prints, cut at `compare.MAX_UNIFIED` characters) and the full result as JSON; and
    A and B side by side (`compare.build_comparison`, with the captures' `sessions`)."""
    res = diff_captures(a, b)
    cmp = build_comparison(res, *sessions, text=redactor.text, value=redactor.value, threads=threads)
    text = cmp.unified
    if cmp.unified_cut:
        text += f"\n… ({cmp.unified_cut} more characters)\n"
    return {
        "equal": bool(res.equal),
        "rows": redactor.value(list(res.summary_rows())),
        "text": text,
        # (`wirecap diff --json`: every detailed difference; only the json format shows it, and for two big
        # captures it is the biggest thing a report holds)
        "json": redactor.value(res.to_json()) if full_json else None,
    }, cmp


def build_report(
    paths: list[str],
    *,
    redactor: Redactor | None = None,
    dialect: str | None = None,
    with_analysis: bool = True,
    relevant: bool = True,
    watch: Callable[[CaptureReader], Iterable[dict[str, Any]]] | None = None,
    diff_json: bool = True,
    comparing: Callable[[str, str], None] | None = None,
) -> Report:
    """A report on one capture, or on two with the diff between them (`relevant`, `watch`: as in
    `build_capture_report`; `diff_json=False` leaves out the diff's full JSON, which only the json
    format shows; `comparing(a, b)` is told when the two captures are read and their diff begins: a
    progress line's next stage)."""
    if not 1 <= len(paths) <= 2:
        raise WirecapError("a report is about one capture, or two to compare")
    redactor = redactor if redactor is not None else Redactor()
    caps = [build_capture_report(p, redactor=redactor, dialect=dialect, with_analysis=with_analysis, relevant=relevant,
                                 watch=watch) for p in paths]
    report = Report(captures=caps)
    if len(paths) == 2:
        if comparing is not None:
            comparing(paths[0], paths[1])
        try:
            report.diff, report.compare = diff_part(paths[0], paths[1], redactor, (caps[0].sessions, caps[1].sessions),
                                                    (caps[0].threads, caps[1].threads), diff_json)
        except Exception as e:  # noqa: BLE001 - the two reports stand without their diff
            report.diff_note = _no_diff(e, paths)
            report.compare = stats_only(paths[0], paths[1], (caps[0].sessions, caps[1].sessions), report.diff_note)
    return report
