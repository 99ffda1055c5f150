"""The reader's counts and verdicts at the end of a file: clean end, torn last record, corrupt middle."""

from __future__ import annotations

from pathlib import Path

from wirecap.capture.reader import CaptureReader
from wirecap.capture.writer import CaptureWriter


def written(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "c.jsonl"
    with CaptureWriter(path, force=True) as w:
        for i in range(n):
            w.msg("stdout", "s2c", b'{"i":%d}' % i)
    return path


def read_all(path: Path) -> tuple[CaptureReader, list[dict], list[bytes]]:
    reader = CaptureReader(path)
    recs, lines = [], []
    for rec in reader:
        recs.append(rec)
        lines.append(reader.line)
    reader.close()
    return reader, recs, lines


def test_clean_capture(tmp_path: Path) -> None:
    reader, recs, lines = read_all(written(tmp_path, 5))
    assert reader.interrupted is None and reader.problems == []
    assert reader.records == 6 and reader.end is not None and reader.last_seq == 6
    assert all(x.endswith(b"\n") for x in lines)


def test_a_complete_record_without_its_newline_is_read_and_reported(tmp_path: Path) -> None:
    path = written(tmp_path, 5)
    data = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(data[:-1]).rstrip(b"\n"))  # drop `end`, then the last newline
    reader, recs, lines = read_all(path)
    assert [r["json"]["i"] for r in recs] == [0, 1, 2, 3, 4]
    assert reader.records == 5 and reader.last_seq == 5
    assert reader.interrupted == f"torn last line {len(data) - 1}: no newline at the end"
    assert lines[-1] == data[-2].rstrip(b"\n") and lines[-2] == data[-3]


def test_corrupt_and_empty_lines_in_the_middle_are_counted_not_read(tmp_path: Path) -> None:
    path = written(tmp_path, 4)
    data = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*data[:2], b"{broken\n", b"\n", *data[2:]]))
    reader, recs, _ = read_all(path)
    assert reader.records == 5 and len(recs) == 5 and reader.skipped == 2
    assert reader.problems == [f"{path}:3: invalid JSON (unexpected character, expected a string key)",
                               f"{path}:4: empty line"]
    assert reader.interrupted is None
