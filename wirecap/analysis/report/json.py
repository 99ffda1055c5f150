"""The report as one JSON document (for scripts and dashboards)."""

from __future__ import annotations

import orjson

from wirecap.analysis.report.common import redact_report_text
from wirecap.analysis.report.model import Report
from wirecap.capture.redact import Redactor


def render_json(report: Report, *, redactor: Redactor | None = None) -> str:
    """Pretty JSON; secret shapes are redacted once more over the text (the model is redacted already)."""
    text = orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
    return redact_report_text(report, text, redactor)
