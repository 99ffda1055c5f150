"""The report as one JSON document (for scripts and dashboards)."""

from __future__ import annotations

from wirecap.analysis.report.common import redact_report_text
from wirecap.analysis.report.model import Report
from wirecap.capture.payload import dumps_nested
from wirecap.capture.redact import Redactor


def render_json(report: Report, *, redactor: Redactor | None = None) -> str:
    """Pretty JSON; secret shapes are redacted once more over the text (the model is redacted already)."""
    text = dumps_nested(report.to_json(), indent=True).decode("utf-8", "surrogatepass") + "\n"
    return redact_report_text(report, text, redactor)
