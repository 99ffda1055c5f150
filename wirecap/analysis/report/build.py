"""The thin I/O shell of reports: read a capture (and its notes) and call the optional analysis parts
(decoders, validation, stats, diff) when this build has them. Each part that is missing or fails is
said so in the report; nothing is made up in its place.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from wirecap.analysis import notes as notes_mod
from wirecap.analysis.diff import diff_captures
from wirecap.analysis.render_diff import render_unified
from wirecap.analysis.report.model import (
    MAX_FINDINGS,
    MAX_RELEVANT,
    CaptureReport,
    RecordSummarizer,
    Report,
    bounded_record,
    conversation_from_events,
    redact_shown,
)
from wirecap.capture.reader import CaptureReader
from wirecap.capture.redact import POLICY_NAME, Redactor
from wirecap.errors import WirecapError

NO_DECODER = "no decoder for this channel"


def _optional(module: str, name: str) -> Any:
    """An analysis function if this build has it, else None."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(mod, name, None)


def already_redacted(header: dict[str, Any], redactor: Redactor) -> bool:
    """Whether the capture was redacted at write time by at least the rules of `redactor` (then its
    records need no second pass: redaction is idempotent, and skipping it keeps big reports fast)."""
    red = header.get("redaction")
    if not isinstance(red, dict) or not red.get("enabled") or red.get("policy") != POLICY_NAME:
        return False
    return set(redactor.extra_keys) <= set(red.get("extra_keys") or ()) and \
        set(redactor.extra_patterns) <= set(red.get("extra_patterns") or ())


def _stream(path: str, redactor: Redactor) -> Iterator[dict[str, Any]]:
    with CaptureReader(path) as reader:
        if already_redacted(reader.header, redactor):
            yield from reader
            return
        for rec in reader:
            yield redact_shown(redactor, rec)


def _relevant_seqs(report: CaptureReport) -> list[int]:
    """Seqs that findings and notes point at (ranges give their first and last), capped."""
    seqs: list[int] = []
    for f in report.findings or []:
        if isinstance(f.get("seq"), int):
            seqs.append(f["seq"])
    for n in report.notes:
        if n.seq is not None:
            seqs.append(n.seq)
            if n.seq_end is not None:
                seqs.append(n.seq_end)
    out: list[int] = []
    for s in seqs:
        if s not in out:
            out.append(s)
    return out[:MAX_RELEVANT]


def _conversation(path: str, report: CaptureReport, redactor: Redactor, dialect: str | None) -> None:
    decode = _optional("wirecap.dialects", "decode_capture")
    # (each channel's dialect and reason come from the record summary: wirecap.dialects.Detection)
    if decode is None:
        for c in report.channels:
            report.conversation_notes[c.ch] = f"{NO_DECODER} (dialect decoders are not available in this build)"
        return
    try:
        events = decode(path, dialect=dialect)
        conv, unparsed, dropped = conversation_from_events(events)
    except Exception as e:  # noqa: BLE001
        report.warnings.append(f"decoding failed: {type(e).__name__}: {e}")
        for c in report.channels:
            report.conversation_notes[c.ch] = f"{NO_DECODER} (decoding failed)"
        return
    for entries in conv.values() if not report.pre_redacted else ():  # events come from redacted records
        for e in entries:
            e.text = redactor.text(e.text) if e.text else e.text
            if e.input is not None:
                e.input = redactor.value(e.input)
    report.conversation = conv
    report.conversation_truncated = dropped
    covered = set(conv)
    # A process's pipes are decoded as one unit: the conversation may sit on `proc` or on `stdout`.
    parents_covered = {other.parent for other in report.channels if other.parent and other.ch in covered}
    for c in report.channels:
        if c.ch in covered or (c.parent and c.parent in covered):
            continue
        if c.ch in parents_covered:  # (a set, not a scan of every channel per channel: 10^4 channels)
            continue
        why = NO_DECODER
        if c.dialect_reason:
            why += f" ({c.dialect_reason})"
        if unparsed.get(c.ch):
            why += f"; {unparsed[c.ch]} message(s) not understood"
        if c.messages or c.kind in ("ws", "http", "pipe"):
            report.conversation_notes[c.ch] = why


def build_capture_report(
    path: str,
    *,
    redactor: Redactor | None = None,
    dialect: str | None = None,
    with_analysis: bool = True,
) -> CaptureReport:
    """Everything a report says about one capture (streams the capture; holds only summaries)."""
    if path != "-" and not os.path.exists(path):
        raise WirecapError(f"{path}: no such file")
    redactor = redactor if redactor is not None else Redactor()
    stats_records = _optional("wirecap.analysis.stats", "stats_records") if with_analysis else None
    sessions: list[dict[str, Any]] | None = None
    with CaptureReader(path) as reader:
        report = CaptureReport(path=path, header=reader.header)
        summarizer = RecordSummarizer(report, dialect=dialect)

        records = iter(reader)

        def summarized() -> Iterator[dict[str, Any]]:
            feed = summarizer.feed
            for rec in records:
                feed(rec)
                yield rec

        # One read serves both the record summary and the dialect statistics.
        if stats_records is not None:
            try:
                sessions = list(stats_records(summarized(), dialect=dialect))
            except Exception as e:  # noqa: BLE001 - a decoder bug must not cost the whole report
                report.sessions_note = f"statistics failed: {type(e).__name__}: {e}"
        for _rec in summarized():  # the rest, if statistics stopped early (or are not there)
            pass
        summarizer.finish()
        report.reader_problems = list(reader.problems)
        report.interrupted = reader.interrupted
        last_seq = reader.last_seq
    report.pre_redacted = already_redacted(report.header, redactor)
    if redactor.enabled:
        report.header = redactor.value(report.header)
        for c in report.channels:
            c.label = redactor.text(c.label)

    # Notes (and whether they still fit the capture).
    probs: list[str] = []
    report.notes = notes_mod.load_notes(path, problems=probs) if path != "-" else []
    if redactor.enabled:  # people paste things into notes too
        report.notes = [replace(n, text=redactor.text(n.text), author=redactor.text(n.author)) for n in report.notes]
    report.note_warnings = probs + notes_mod.check_notes(
        report.notes, last_seq, [c.ch for c in report.channels], notes_mod.notes_path(path) if path != "-" else "notes")

    if with_analysis:
        if sessions is not None:
            report.sessions = redactor.value(sessions) if not report.pre_redacted else sessions
        elif not report.sessions_note:
            report.sessions_note = "dialect statistics are not available in this build (record counts only)"
        validate = _optional("wirecap.analysis.validate", "validate_capture")
        if validate is None:
            report.findings_note = "validation is not available in this build"
        else:
            try:
                found = validate(path, dialect=dialect)
                report.findings = [
                    {"severity": f.severity, "rule": f.rule, "message": redactor.text(str(f.message)),
                     "seq": f.seq, "ch": f.ch} for f in found[:MAX_FINDINGS]
                ]
                if len(found) > MAX_FINDINGS:
                    report.findings_omitted = Counter(f.severity for f in found[MAX_FINDINGS:])
                    report.warnings.append(f"only the first {MAX_FINDINGS} of {len(found)} findings are listed "
                                           f"(`wirecap validate {path}` lists them all)")
            except Exception as e:  # noqa: BLE001
                report.findings_note = f"validation failed: {type(e).__name__}: {e}"
        _conversation(path, report, redactor, dialect)
    else:
        for c in report.channels:
            report.conversation_notes[c.ch] = NO_DECODER

    # The raw messages that findings and notes point at (for markdown's <details>, json).
    wanted = set(_relevant_seqs(report))
    if wanted and path != "-":
        for rec in _stream(path, redactor):
            if rec.get("seq") in wanted:
                report.relevant[rec["seq"]] = bounded_record(rec)
                if len(report.relevant) == len(wanted):
                    break
    if path != "-":
        report.iter_records = lambda: _stream(path, redactor)
    return report


def build_report(
    paths: list[str],
    *,
    redactor: Redactor | None = None,
    dialect: str | None = None,
    with_analysis: bool = True,
) -> Report:
    """A report on one capture, or on two with the diff between them."""
    if not 1 <= len(paths) <= 2:
        raise WirecapError("a report is about one capture, or two to compare")
    redactor = redactor if redactor is not None else Redactor()
    caps = [build_capture_report(p, redactor=redactor, dialect=dialect, with_analysis=with_analysis) for p in paths]
    report = Report(captures=caps)
    if len(paths) == 2:
        try:
            res = diff_captures(paths[0], paths[1])
            text = render_unified(res, color=False)
            if len(text) > 200_000:
                text = text[:200_000] + f"\n… ({len(text) - 200_000} more characters)\n"
            report.diff = {
                "equal": bool(res.equal),
                "rows": redactor.value(list(res.summary_rows())),
                "text": redactor.text(text),
                "json": redactor.value(res.to_json()),
            }
        except Exception as e:  # noqa: BLE001
            report.diff_note = f"diff failed: {type(e).__name__}: {e}"
    return report
