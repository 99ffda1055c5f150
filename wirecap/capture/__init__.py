"""The capture format: records, writer, reader, redaction. No I/O policy beyond files.

The names below load their module on first use: a command that only reads captures never pays for
importing the writer (and its hashing and socket modules) at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "encode_payload": "payload",
    "payload_bytes": "payload",
    "payload_text": "payload",
    "CaptureReader": "reader",
    "open_capture": "reader",
    "read_records": "reader",
    "Redactor": "redact",
    "validate_capture_file": "schema",
    "CaptureWriter": "writer",
    "default_origin": "writer",
    "open_writer": "writer",
}

__all__ = [
    "CaptureReader",
    "CaptureWriter",
    "Redactor",
    "default_origin",
    "encode_payload",
    "open_capture",
    "open_writer",
    "payload_bytes",
    "payload_text",
    "read_records",
    "validate_capture_file",
]

if TYPE_CHECKING:
    from wirecap.capture.payload import encode_payload, payload_bytes, payload_text
    from wirecap.capture.reader import CaptureReader, open_capture, read_records
    from wirecap.capture.redact import Redactor
    from wirecap.capture.schema import validate_capture_file
    from wirecap.capture.writer import CaptureWriter, default_origin, open_writer


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
