"""The capture format: records, writer, reader, redaction. No I/O policy beyond files."""

from wirecap.capture.payload import encode_payload, payload_bytes, payload_text
from wirecap.capture.reader import CaptureReader, open_capture, read_records
from wirecap.capture.redact import Redactor
from wirecap.capture.schema import validate_capture_file
from wirecap.capture.writer import CaptureWriter, default_origin, open_writer

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
