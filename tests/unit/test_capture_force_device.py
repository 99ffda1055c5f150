"""`--force` makes an overwritten capture file private (0600), but never chmods what is not a file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from wirecap.capture.writer import CaptureWriter


def test_force_on_a_fifo_leaves_its_mode_alone(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo, 0o644)
    os.chmod(fifo, 0o644)  # whatever the umask did
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that opening it for writing does not block
    try:
        w = CaptureWriter(fifo, force=True)
        w.msg("stdout", "s2c", b'{"a":1}')
        w.close()
        data = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert stat.S_IMODE(os.stat(fifo).st_mode) == 0o644
    assert data.startswith(b'{"wirecap":1,"type":"header"') and b'"json":{"a":1}' in data


def test_force_on_a_file_makes_it_private(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"old")
    os.chmod(path, 0o644)
    CaptureWriter(path, force=True).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not path.read_bytes().startswith(b"old")
