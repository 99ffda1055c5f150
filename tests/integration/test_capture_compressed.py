""".gz and .zst captures: written decodable at once, read up to the cut when torn, by every command."""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

import pytest
import zstandard
from conftest import run_wirecap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.capture import CaptureReader, CaptureWriter
from wirecap.capture.compressed import DecompressingReader, TornStream

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "captures" / "claude-code-2.1.197-tool-bash.jsonl"  # a `record -- claude` capture: proc, pipes, http


def gzip_parts(pieces: list[bytes]) -> list[bytes]:
    """One gzip stream, a partial flush after each piece (as CaptureWriter writes); the last part ends it."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    parts = [z.compress(p) + z.flush(zlib.Z_PARTIAL_FLUSH) for p in pieces]
    return [*parts, z.flush()]


def zstd_parts(pieces: list[bytes]) -> list[bytes]:
    z = zstandard.ZstdCompressor(level=3).compressobj()
    parts = [z.compress(p) + z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) for p in pieces]
    return [*parts, z.flush()]


PARTS = {"gzip": gzip_parts, "zstd": zstd_parts}


def decode(blob: bytes, kind: str) -> tuple[bytes, str | None]:
    """Everything the reader gives, then the TornStream message (None when the stream ended cleanly)."""
    r = DecompressingReader(io.BytesIO(blob), kind)
    out = bytearray()
    try:
        while chunk := r.read(7919):
            out += chunk
    except TornStream as e:
        return bytes(out), str(e)
    return bytes(out), None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.binary(max_size=3000), min_size=1, max_size=12), kind=st.sampled_from(["gzip", "zstd"]),
       cut=st.floats(min_value=0, max_value=1))
def test_a_stream_cut_anywhere_gives_everything_flushed_before_the_cut(pieces, kind, cut):
    parts = PARTS[kind](pieces)
    blob = b"".join(parts)
    n = int(len(blob) * cut)
    out, torn = decode(blob[:n], kind)
    data = b"".join(pieces)
    assert data.startswith(out)  # a prefix, never a wrong byte
    flushed, size = 0, 0
    for piece, part in zip(pieces, parts, strict=False):
        size += len(part)
        if size > n:
            break
        flushed += len(piece)
    assert len(out) >= flushed  # every piece whose flush is wholly in the file came out
    if n == len(blob):
        assert (out, torn) == (data, None)
    elif n > 0:  # the end of the stream is missing: said so, after the data
        assert torn is not None and "cut short" in torn


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_members_frames_and_padding_are_all_read(kind):
    lines = [b"%d\n" % i for i in range(3000)]
    if kind == "gzip":  # what wirecap 0.1 wrote (a member per second), NUL padding between and after
        blob = gzip.compress(b"".join(lines[:1000])) + b"\0" * 7 + gzip.compress(b"".join(lines[1000:])) + b"\0\0"
    else:  # a frame per second (0.1), and one streamed frame
        c = zstandard.ZstdCompressor()
        blob = c.compress(b"".join(lines[:1000])) + b"".join(zstd_parts(lines[1000:]))
    assert decode(blob, kind) == (b"".join(lines), None)
    out, torn = decode(blob[:-5], kind)
    assert b"".join(lines).startswith(out) and len(out) > 10000 and torn


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_damage_stops_the_stream_with_a_message(kind):
    blob = b"".join(PARTS[kind]([b"x" * 100 + b"\n"] * 50))
    bad = blob[:40] + bytes(b ^ 0x55 for b in blob[40:80]) + blob[80:]
    decode(bad, kind)  # only TornStream may come out (zstd without checksums may not notice every flip)
    cut = blob[:30] + b"\xff" * 40
    out, torn = decode(cut, kind)
    assert torn is not None and ("damaged" in torn or "cut short" in torn)


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_a_compressed_capture_is_readable_before_close_header_first(tmp_path, suffix):
    """The header is decodable at once; each record is readable as soon as `msg` returns (no close)."""
    path = tmp_path / f"c{suffix}"
    w = CaptureWriter(path)
    with CaptureReader(path) as r:  # nothing but the header yet: decodable, the stream not ended
        assert r.header["type"] == "header"
        assert list(r) == []
    assert r.interrupted and "ends early" in r.interrupted
    w.open("stdout", "pipe", proc="proc", stream="stdout")
    for i in range(5):
        w.msg("stdout", "s2c", f'{{"i":{i}}}')
        with CaptureReader(path) as r:
            recs = list(r)
        assert [rec.get("json") for rec in recs[1:]] == [{"i": k} for k in range(i + 1)]
        assert r.interrupted and "ends early" in r.interrupted
    w.close()
    with CaptureReader(path) as r:
        assert len(list(r)) == 7 and r.interrupted is None


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_a_batch_reaches_the_file_in_one_flush(tmp_path, suffix):
    path = tmp_path / f"c{suffix}"
    w = CaptureWriter(path)
    size = path.stat().st_size
    with w.batch():
        w.open("stdout", "pipe", proc="proc", stream="stdout")
        for i in range(50):
            w.msg("stdout", "s2c", f"line {i}")
        assert path.stat().st_size == size  # held until the batch ends
    assert path.stat().st_size > size
    with CaptureReader(path) as r:
        assert len(list(r)) == 51
    w.close()


# --- every command, clean and torn -------------------------------------------------------------------
def _compressed(tmp_path: Path, suffix: str, torn: bool) -> tuple[Path, int]:
    """CAPTURE compressed as the writer does it (a flush per record); torn: cut 3 bytes into record 41's
    flush. Returns the path and the number of records it holds."""
    lines = CAPTURE.read_bytes().splitlines(True)
    parts = PARTS["gzip" if suffix.endswith(".gz") else "zstd"](lines)
    if torn:
        keep = 41  # the header and 40 records, then 3 bytes of the next
        blob = b"".join(parts[:keep]) + parts[keep][:3]
        records = keep - 1
    else:
        blob = b"".join(parts)
        records = len(lines) - 1
    path = tmp_path / f"{'torn' if torn else 'clean'}{suffix}"
    path.write_bytes(blob)
    return path, records


COMMANDS = {
    "info": lambda p, o: ["info", p],
    "cat": lambda p, o: ["cat", "--json", p],
    "convert": lambda p, o: ["convert", p],
    "validate": lambda p, o: ["validate", p],
    "stats": lambda p, o: ["stats", p],
    "diff": lambda p, o: ["diff", str(CAPTURE), p],
    "report": lambda p, o: ["report", p, "-o", str(o / "r.html")],
    "export": lambda p, o: ["export", p, "-o", str(o / "e.har")],
    "replay exec": lambda p, o: ["replay", "exec", p, "--speed", "0"],
}


@pytest.fixture(scope="module")
def plain_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("plain")
    return {name: run_wirecap(*argv(str(CAPTURE), out)) for name, argv in COMMANDS.items()}


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reads_a_clean_compressed_capture_as_the_plain_one(tmp_path, suffix, command, plain_results):
    path, _ = _compressed(tmp_path, suffix, torn=False)
    res = run_wirecap(*COMMANDS[command](str(path), tmp_path))
    plain = plain_results[command]
    assert b"Traceback" not in res.stderr
    assert res.returncode == plain.returncode == (0 if command not in ("diff", "validate") else plain.returncode)
    if command in ("cat", "convert", "stats", "replay exec", "validate"):
        assert res.stdout.replace(str(path).encode(), b"CAP") == plain.stdout.replace(str(CAPTURE).encode(), b"CAP")


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reads_a_torn_compressed_capture_up_to_the_cut(tmp_path, suffix, command):
    path, records = _compressed(tmp_path, suffix, torn=True)
    res = run_wirecap(*COMMANDS[command](str(path), tmp_path))
    err = res.stderr.decode()
    assert "Traceback" not in err and res.returncode in (0, 1), err
    if command == "cat":
        assert len(res.stdout.splitlines()) == records + 1  # the header, then every record before the cut
    if command in ("cat", "convert", "diff", "validate", "info"):
        assert "stream cut short" in err + res.stdout.decode()
