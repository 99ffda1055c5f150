"""The report as one JSON document (for scripts and dashboards)."""

from __future__ import annotations

import orjson

from wirecap.analysis.report.model import Report
from wirecap.capture.redact import Redactor


def render_json(report: Report, *, redactor: Redactor | None = None) -> str:
    """Pretty JSON; every string passes the redactor once more (the model is redacted already)."""
    redactor = redactor if redactor is not None else Redactor()
    data = report.to_json()
    if redactor.enabled:
        data = redactor.value(data)
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
