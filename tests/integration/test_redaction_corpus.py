"""Redaction measured: 0 bytes of 100,000 realistic non-secrets altered, 100 % of secrets redacted.

The corpora are generated in code (tests/redaction_corpus.py, seeded). Non-secrets go through the
three recorders as a user runs them (`wirecap import`, `wirecap tee`, `wirecap record --reverse` with
a real upstream on 127.0.0.1); secrets go in every position a recorder hands to the redactor. The
scanner is checked against a plain reference implementation (hypothesis) and for its structure
(possessive runs, no nested quantifiers: linear time); its time per MB is `make bench` (bench_redact).
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import brotli
import orjson
import pytest
import zstandard
from conftest import lab_dir as _lab
from conftest import run_wirecap
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from record_util import read_capture, record_home, recorder  # noqa: F401
from redaction_corpus import ADVERSARIAL, json_escape_ascii, non_secrets, secrets

from wirecap.capture import CaptureWriter
from wirecap.capture import redact as R
from wirecap.capture.payload import line_bytes, payload_bytes
from wirecap.capture.sse import sse_event_bytes

N_CORPUS = 100_000
CORPUS = non_secrets(N_CORPUS)
STRINGS = [s for _, s in CORPUS]
SECRETS = secrets()


def _report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    """Rates go to the terminal even when pytest captures output (it would show them only on failure)."""
    with capsys.disabled():
        print(f"\n[redaction] {line}")


def _derived(secret: str) -> list[str]:
    return [f for f in R._derived_forms(secret) if len(f) >= 16]


def _leaks(data: bytes, secret: str) -> bool:
    """Any spelling of `secret` (or of a body of it) left in the capture bytes."""
    forms = {secret, json.dumps(secret)[1:-1]}
    forms.update(_derived(secret))
    return any(f.encode() in data for f in forms) or base64.b64encode(secret.encode()) in data


# --- in process: every redactor entry point -------------------------------------------------------
def test_in_process_rates_no_false_positive_and_full_recall(capsys: pytest.CaptureFixture[str]) -> None:
    red = R.Redactor()
    altered = 0
    for s in STRINGS:
        for out, inp in ((red.text(s), s), (red.value({"k": s})["k"], s), (red.header_value("x-corpus", s), s),
                         (red.argv(["cmd", s])[1], s)):
            if out != inp:
                altered += sum(a != b for a, b in zip(out, inp, strict=False)) + abs(len(out) - len(inp))
    blob = "\n".join(STRINGS[:20000])
    raw = json.dumps({"items": STRINGS[:20000]}, indent=1)  # non-canonical JSON: kept as `raw`
    b64 = base64.b64encode(blob.encode()).decode()
    assert red.raw_json(raw) == raw
    assert red.b64(b64) == b64
    assert red.url("https://example.com/x?q=" + urllib.parse.quote(STRINGS[0])) == "https://example.com/x?q=" + \
        urllib.parse.quote(STRINGS[0])
    assert red.hits == 0 and altered == 0
    placed = found = 0
    for _kind, secret in SECRETS:
        r = R.Redactor()
        texts = [f"x {secret} y", f"\n{secret}\n", f'"{secret}"', f"key={secret}&b=1", f"({secret})", secret + ".",
                 f"data: {secret}", f"\t{secret}"]
        for t in texts:
            placed += 1
            found += secret not in r.text(t)
        placed += 4
        found += secret not in orjson.dumps(r.value({"a": [f"see {secret}"]})).decode()
        esc = json_escape_ascii(secret)
        raw = '{"a" : "line\\n' + esc + '"}'
        out = r.raw_json(raw)
        found += esc not in out and secret not in out
        found += secret.encode() not in base64.b64decode(r.b64(base64.b64encode(b"\x00\x01" + secret.encode() + b"\xff").decode()))
        frame = b"\x82\xd9" + bytes([len(secret) % 256]) + secret.encode() + b"\xa4next"  # msgpack-like str8
        found += secret.encode() not in base64.b64decode(r.b64(base64.b64encode(frame).decode()))
    _report(capsys, f"in-process: {N_CORPUS} non-secrets x 4 entry points + raw/b64/url: {altered} bytes altered; "
            f"{len(SECRETS)} secrets ({len({k for k, _ in SECRETS})} forms) x {placed // len(SECRETS)} positions: "
            f"{found}/{placed} redacted = {100 * found / placed:.1f} %")
    assert found == placed


def test_learned_secret_and_its_derived_forms_are_redacted_later() -> None:
    r = R.Redactor()
    key = "sk-ant-api03-" + "Zq9" * 20 + "AA"
    body = key[len("sk-ant-api03-"):]
    hdrs = r.headers_dict({"x-trace-key": body, "x-api-key": key})  # the derived header comes first
    assert body not in hdrs["x-trace-key"] and key not in hdrs["x-api-key"]
    fp = R.fingerprint(key)
    assert hdrs["x-trace-key"] == f"«redacted:x-api-key:{fp}»"
    out = r.text(f"echo {body} then {key} then ?k=" + urllib.parse.quote(key))
    assert body not in out and key not in out and out.count(fp) == 3
    # a lab-style key no shape knows, learned from where it was seen
    r2 = R.Redactor()
    r2.learn_env({"CODEBUDDY_API_KEY": "cb-fake-000", "OPENAI_API_KEY": "sk-fake-000000", "HOME": "/root"})
    out = r2.text("key cb-fake-000 and sk-fake-000000 but not xcb-fake-000 nor the task-queue")
    assert out.startswith("key «redacted:codebuddyapikey:") and "sk-fake-000000" not in out
    assert "xcb-fake-000" in out and "task-queue" in out


def test_secret_written_with_json_escapes_is_gone_from_the_kept_raw(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "Ab1" * 20 + "AA"
    esc = key.replace("-", "\\u002d", 1)
    line = ('{"prompt": "use ' + esc + '", "apiKey" : "' + json_escape_ascii("plain-secret-value-1") + '",'
            ' "n": 1}').encode()
    path = tmp_path / "c.jsonl"
    with CaptureWriter(path, force=True) as w:
        w.msg("ws-1", "c2s", line)
    _, recs, _ = read_capture(path)
    msg = next(r for r in recs if r["type"] == "msg")
    assert "raw" in msg and "redacted" in msg["flags"]
    data = path.read_bytes()
    assert key.encode() not in data and esc.encode() not in data and b"plain-secret" not in data
    assert orjson.loads(msg["raw"]) == msg["json"]  # the same placeholders in both
    assert msg["raw"].endswith(', "n": 1}')  # the rest kept byte for byte


# --- the three recorders, non-secrets: 0 bytes altered -----------------------------------------
def _chunks(n: int) -> list[list[str]]:
    size = len(STRINGS) // n
    return [STRINGS[i * size:(i + 1) * size] for i in range(n)]


def test_import_alters_no_byte_of_the_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps({"type": "item", "text": " ".join(c), "items": c}) for c in _chunks(400)]
    lines += STRINGS[:20000]  # plain text lines too
    src = tmp_path / "out.jsonl"
    src.write_text("\n".join(lines) + "\n")
    cap = tmp_path / "imp.jsonl"
    res = run_wirecap("import", str(src), "-o", str(cap), "--kind", "stdout")
    assert res.returncode == 0, res.stderr
    _, recs, _ = read_capture(cap)
    got = b"".join(line_bytes(r) for r in recs if r["type"] == "msg")
    assert not any("redacted" in (r.get("flags") or []) for r in recs)
    altered = sum(a != b for a, b in zip(got, src.read_bytes(), strict=False)) + abs(len(got) - src.stat().st_size)
    _report(capsys, f"wirecap import: {N_CORPUS} non-secrets (+20,000 as lines), {src.stat().st_size} bytes: {altered} altered")
    assert got == src.read_bytes()


def test_tee_alters_no_byte_of_the_corpus_and_redacts_the_childs_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "corpus.txt"
    body = "\n".join(json.dumps({"items": c}, separators=(",", ":")) for c in _chunks(200)) + "\n"
    body += "\n".join(STRINGS) + "\n"
    src.write_text(body)
    key = "lab-key-without-shape-0001"
    shaped = SECRETS[0][1]
    prog = ("import os,sys; sys.stdout.write(open(sys.argv[1]).read()); "
            "print('key', os.environ['ANTHROPIC_API_KEY'], sys.argv[2]); print(sys.argv[3])")
    cap = tmp_path / "tee.jsonl"
    env = dict(os.environ, ANTHROPIC_API_KEY=key)
    res = run_wirecap("tee", "-o", str(cap), "--", sys.executable, "-c", prog, str(src), f"--api-key={shaped}",
                      "run the disk-usage-report script on src/task-queue-worker.ts", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(body.encode())  # passthrough untouched
    _, recs, _ = read_capture(cap)
    stdout = [r for r in recs if r["type"] == "msg" and r["ch"] == "stdout"]
    got = b"".join(line_bytes(r) for r in stdout)
    n = len(body.encode())
    altered = sum(a != b for a, b in zip(got[:n], body.encode(), strict=False))
    _report(capsys, f"wirecap tee: {N_CORPUS} non-secrets, {n} bytes of stdout: {altered} altered")
    assert got[:n] == body.encode()
    assert got[n:] .endswith(b"run the disk-usage-report script on src/task-queue-worker.ts\n")
    data = cap.read_bytes()
    assert key.encode() not in data and shaped.encode() not in data
    assert b"run the disk-usage-report script on src/task-queue-worker.ts" in data  # argv kept, as typed


def test_tee_redacts_secrets_split_over_chunks_and_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = []
    for kind, s in SECRETS:
        parts.append(f'{{"k":"{kind}","v":"see {s}"}}\n')
        parts.append(f'{{"esc":"line\\n{json_escape_ascii(s)}"}}\n')
    text = "".join(parts)
    prog = ("import sys,time\nt=sys.argv[1]\nfor i in range(0,len(t),997):\n"
            " sys.stdout.write(t[i:i+997]); sys.stdout.flush(); time.sleep(0.001)\n")
    cap = tmp_path / "tee2.jsonl"
    res = run_wirecap("tee", "-o", str(cap), "--", sys.executable, "-c", prog, text)
    assert res.returncode == 0, res.stderr
    data = cap.read_bytes()
    missed = [k for k, s in SECRETS if _leaks(data, s) or json_escape_ascii(s).encode() in data]
    _report(capsys, f"wirecap tee: {len(SECRETS)} secrets x 2 positions (in JSON, \\u-escaped after a \\n), written in 997-byte pieces: "
            f"{len(SECRETS) - len(set(missed))}/{len(SECRETS)} redacted")
    assert missed == []


# --- wirecap record --reverse with a real upstream on 127.0.0.1 -----------------------------------
class Upstream:
    """A tiny HTTP/1.1 server: `handler(method, path, headers, body)` returns (head, pieces); each piece
    is one TCP write, a short pause apart (an SSE event split across writes)."""

    def __init__(self, handler) -> None:
        self.handler = handler
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(20)
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            head, _, body = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            n = int(headers.get("content-length", "0"))
            while len(body) < n:
                body += conn.recv(65536)
            status_head, pieces = self.handler(method, path, headers, body)
            conn.sendall(status_head)
            for p in pieces:
                conn.sendall(p)
                if len(pieces) > 1:
                    time.sleep(0.002)

    def close(self) -> None:
        self.sock.close()


def _head(ctype: str, length: int | None, extra: str = "") -> bytes:
    h = f"HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\nconnection: close\r\n{extra}"
    h += f"content-length: {length}\r\n" if length is not None else ""
    return (h + "\r\n").encode()


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def _fp_handler(method, path, headers, body):
    i = int(path.split("/")[2].split("?")[0])
    items = _chunks(100)[i]
    if i % 2 == 0:  # SSE, pieces of 700 bytes (events split across writes), non-canonical JSON data
        sse = b"".join(b"event: item\ndata: " + json.dumps({"items": items[j:j + 40]}).encode() + b"\n\n"
                       for j in range(0, len(items), 40))
        return _head("text/event-stream", None), _split(sse, 700)
    data = gzip.compress(json.dumps({"items": items}, separators=(",", ":")).encode(), mtime=0)
    return _head("application/json", len(data), "content-encoding: gzip\r\n"), [data]


def _fp_requests(port: int) -> dict[str, tuple[str, dict, bytes]]:
    sent = {}
    for i, items in enumerate(_chunks(100)):
        q = urllib.parse.urlencode({"q": items[0], "page": "2", "path": items[1]})
        url = f"/fp/{i}?{q}"
        hdrs = {"x-corpus-a": items[2], "x-corpus-b": items[3], "content-type": "application/json"}
        body = json.dumps({"items": items}).encode()  # ", " and ": ": kept as `raw`
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("POST", url, body=body, headers=hdrs)
        resp = c.getresponse()
        resp.read()
        c.close()
        sent[url] = (url, hdrs, body)
    return sent


@pytest.mark.usefixtures("record_home")
def test_record_alters_no_byte_of_the_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    up = Upstream(_fp_handler)
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{up.port}") as rec:
            sent = _fp_requests(rec.port)
            assert rec.stop() == 0, rec.stderr()
    finally:
        up.close()
    _, recs, _ = read_capture(rec.cap)
    assert not any("redacted" in (r.get("flags") or []) for r in recs), "a non-secret was redacted"
    opens = {r["ch"]: r for r in recs if r["type"] == "open" and r["kind"] == "http"}
    checked = 0
    for ch, o in opens.items():
        path = o["url"].split(str(up.port), 1)[1] if str(up.port) in o["url"] else o["url"]
        url, hdrs, body = sent[path]
        for k, v in hdrs.items():
            assert o["headers"][k] == v
        c2s = b"".join(payload_bytes(r) for r in recs if r.get("ch") == ch and r.get("dir") == "c2s")
        assert c2s == body
        i = int(path.split("/")[2].split("?")[0])
        s2c = [r for r in recs if r.get("ch") == ch and r.get("dir") == "s2c" and r["type"] == "msg"]
        items = _chunks(100)[i]
        if i % 2 == 0:
            want = b"".join(b"event: item\ndata: " + json.dumps({"items": items[j:j + 40]}).encode() + b"\n\n"
                            for j in range(0, len(items), 40))
            assert b"".join(sse_event_bytes(r) for r in s2c) == want
        else:
            assert b"".join(payload_bytes(r) for r in s2c) == json.dumps({"items": items}, separators=(",", ":")).encode()
        checked += 1
    assert checked == 100
    _report(capsys, f"wirecap record --reverse: {N_CORPUS} non-secrets in URLs, headers, request bodies (raw kept), "
            f"SSE split over TCP writes and gzip bodies: 0 bytes altered over {checked} exchanges")


def _secret_handler(method, path, headers, body):
    kind = path.split("/")[2].split("?")[0]
    payload = json.dumps({"items": [f"{k} {s}." for k, s in SECRETS]}).encode()
    if kind == "gzip":
        data = gzip.compress(payload)
    elif kind == "br":
        data = brotli.compress(payload)
    elif kind == "zstd":
        data = zstandard.ZstdCompressor().compress(payload)
    else:  # SSE: every event split into 7-byte writes (a key crosses many TCP reads), escaped spellings too
        sse = b"".join(b"data: " + json.dumps({"k": k, "v": f"is {s}"}).encode() + b"\n\n" +
                       b'data: {"e": "line\\n' + json_escape_ascii(s).encode() + b'"}\n\n' for k, s in SECRETS)
        return _head("text/event-stream", None), _split(sse, 7)
    return _head("application/json", len(data), f"content-encoding: {kind}\r\n"), [data]


@pytest.mark.usefixtures("record_home")
def test_record_redacts_every_secret_in_every_position(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    api_key = next(s for k, s in SECRETS if k == "anthropic-key")
    body_only = api_key[len("sk-ant-api03-"):]
    jwt = next(s for k, s in SECRETS if k == "jwt")
    google = next(s for k, s in SECRETS if k == "google-key")
    up = Upstream(_secret_handler)
    positions = 0
    try:
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{up.port}") as rec:
            for kind in ("gzip", "br", "zstd", "sse"):
                q = urllib.parse.urlencode({"key": google, "q": SECRETS[len(SECRETS) // 2][1], "note": "task-queue"})
                body = json.dumps({"messages": [{"text": f"use {s} now"} for _, s in SECRETS],
                                   "esc": [json_escape_ascii(s) for _, s in SECRETS]}).encode()
                body = body.replace(b"\\\\u", b"\\u")  # real \u escapes in the wire JSON
                hdrs = {"x-api-key": api_key, "x-trace-id": SECRETS[-1][1], "x-key-body": body_only,
                        "authorization": f"Bearer {jwt}", "content-type": "application/json"}
                c = http.client.HTTPConnection("127.0.0.1", rec.port, timeout=30)
                c.request("POST", f"/s/{kind}?{q}", body=body, headers=hdrs)
                resp = c.getresponse()
                resp.read()
                c.close()
                # 4 headers, 2 query values, the body (plain and \u-escaped), the response (SSE: plain and escaped)
                positions += 6 + 2 * len(SECRETS) + (2 if kind == "sse" else 1) * len(SECRETS)
            # later: the learned key in a body, without its prefix
            c = http.client.HTTPConnection("127.0.0.1", rec.port, timeout=30)
            c.request("POST", "/s/gzip", body=json.dumps({"note": f"again {body_only}"}).encode())
            c.getresponse().read()
            c.close()
            positions += 1
            assert rec.stop() == 0, rec.stderr()
    finally:
        up.close()
    data = rec.cap.read_bytes()
    missed = sorted({k for k, s in SECRETS if _leaks(data, s) or json_escape_ascii(s).encode() in data})
    assert body_only.encode() not in data and google.encode() not in data
    _report(capsys, f"wirecap record --reverse: {len(SECRETS)} secrets of {len({k for k, _ in SECRETS})} forms in "
            f"headers (listed, unlisted, derived), URL query, JSON bodies (plain and \\u-escaped, raw kept), "
            f"gzip/br/zstd bodies, SSE split into 7-byte writes: {positions} placements, missed shapes: {missed or 'none'}")
    assert missed == []
    _, recs, _ = read_capture(rec.cap)
    opens = [r for r in recs if r["type"] == "open"]
    assert all(o["headers"]["x-key-body"].startswith("«redacted:x-api-key:") for o in opens if "x-key-body" in o["headers"])


# --- the scanner: a plain reference, structure, adversarial inputs ----------------------------------
def _word(c: str) -> bool:
    return c.isalnum() or c in "_-"


TOK = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
BEARER_CHARS = TOK | set("._~+/")
PREFIXES = ("sk-", "cb-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "AIza",
            "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "phc_", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "eyJ")


def _run_end(s: str, i: int, chars: set[str]) -> int:
    while i < len(s) and s[i] in chars:
        i += 1
    return i


def reference_scan(s: str) -> list[tuple[int, int, str]]:
    """What `_scan` must find (text mode), written as plain loops over the spec in the module doc."""
    out, p, n = [], 0, len(s)
    while p < n:
        if p > 0 and _word(s[p - 1]):
            p += 1
            continue
        if s.startswith("Bearer ", p):
            q = p + 6
            while q < n and s[q] == " ":
                q += 1
            r = _run_end(s, q, BEARER_CHARS)
            while r < n and s[r] == "=":
                r += 1
            val = s[q:r]
            if (len(val.rstrip("=")) >= 16 and val[0].isalnum() and any(c.isdigit() for c in val)
                    and any(c.isalpha() for c in val) and not ("/" in val and "." in val)
                    and (r == n or not _word(s[r]))):
                sub = reference_scan(val)
                out.append((q, r, sub[0][2] if len(sub) == 1 and sub[0][:2] == (0, len(val)) else "bearer"))
                p = r
            else:
                p = q
            continue
        if not s.startswith(PREFIXES, p):
            p += 1
            continue
        e = _run_end(s, p, TOK)
        if e < n and _word(s[e]):
            p = e
            continue
        tok = s[p:e]
        if tok.startswith("eyJ") and len(tok) >= 13 and e < n and s[e] == ".":
            e1 = _run_end(s, e + 1, TOK)
            if s.startswith("eyJ", e + 1) and e1 - e - 1 >= 13 and e1 < n and s[e1] == ".":
                e2 = _run_end(s, e1 + 1, TOK)
                if e2 == n or not _word(s[e2]):
                    out.append((p, e2, "jwt"))
                    p = e2
                    continue
        for shape in R.SHAPES:
            if re.fullmatch(shape.regex, tok) and (not shape.digit or any(c.isdigit() for c in tok)):
                out.append((p, e, shape.kind))
                break
        p = e
    return out


pieces = st.one_of(
    st.sampled_from(PREFIXES + ("Bearer ", "bearer  ", "sk-ant-", "sk-proj-", "cb-pat-", "xoxb-1234-", "-", "_", ".",
                                " ", "/", "é", "\n", "=", "eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.")),
    st.text(alphabet="aZ09_-.", min_size=1, max_size=40),
    st.sampled_from([s for _, s in SECRETS]),
    st.sampled_from(STRINGS[:2000]),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pieces, max_size=12).map("".join))
@example("run the disk-usage-report script on src/task-queue-worker.ts")
@example("Bearer " + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc_DEF-123")
@example("x.eyJaaaaaaaaaaaa.eyJaaaaaaaaaaaa.eyJaaaaaaaaaaaa.sig")
def test_scan_equals_the_reference(s: str) -> None:
    assert R._scan(s) == reference_scan(s)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([s for _, s in SECRETS]), st.sampled_from(" \n\t\"'(=:,;/")), max_size=4),
       st.lists(st.sampled_from(STRINGS[:5000]), max_size=6))
def test_text_redacts_whole_secrets_and_keeps_the_rest(secs: list, words: list) -> None:
    parts = [w for w in words]
    for s, sep in secs:
        parts.append(sep + s + sep)
    text = " ".join(parts)
    out = R.Redactor().text(text)
    for s, _ in secs:
        assert s not in out
    assert out.startswith(" ".join(words))  # the non-secrets before them: byte for byte


def _repeats(pattern: str | bytes) -> list[tuple[bool, bool, bool]]:
    """(unbounded, possessive, holds an unbounded repeat) for every repeat in a regex."""
    from re import _constants as C  # noqa: PLC2701 - the parser is the only way to see the structure
    from re import _parser as P  # noqa: PLC2701

    found: list[tuple[bool, bool, bool]] = []

    def walk(items) -> bool:
        any_unbounded = False
        for op, av in items:
            if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                lo, hi, sub = av
                inner = walk(sub)
                unbounded = hi == C.MAXREPEAT
                found.append((unbounded, op == C.POSSESSIVE_REPEAT, inner))
                any_unbounded |= unbounded or inner
            elif op in (C.SUBPATTERN,):
                any_unbounded |= walk(av[-1])
            elif op in (C.BRANCH,):
                for b in av[1]:
                    any_unbounded |= walk(b)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                any_unbounded |= walk(av[1])
            elif op == C.ATOMIC_GROUP:
                any_unbounded |= walk(av)
        return any_unbounded

    walk(P.parse(pattern))
    return found


def test_scanner_regexes_cannot_backtrack() -> None:
    """Every unbounded repeat the scanner and its classifiers use is possessive, none holds another:
    each attempt reads a run once, and the left-boundary lookbehind starts attempts only at runs."""
    pats = [R._CAND_TEXT, R._CAND_BIN, R._JWT_TAIL, R._BEARER_RUN, R.JWT_SEGMENT, R.BEARER_TOKEN, R._ESC,
            R.Redactor._STRING, R.Redactor._SCALAR, R.Redactor._AFTER_KEY, R.Redactor._URL_PARTS,
            R._ENV_NAME, R._HEADER_NAME] + [rx for _, rx in R._SHAPE_RES]
    for p in pats:
        for unbounded, possessive, nested in _repeats(p.pattern):
            assert not (nested and unbounded), p.pattern  # an optional group may hold a run, a run may not
            assert possessive or not unbounded, p.pattern
    # the lookbehind of a candidate excludes every character its run may read
    assert "(?<![\\w\\-])" in R._CAND_TEXT.pattern


@pytest.mark.parametrize("unit", ADVERSARIAL)
def test_adversarial_megabyte_is_scanned_and_matches_the_reference(unit: str) -> None:
    s = unit * (1_000_000 // len(unit))
    assert R._scan(s) == reference_scan(s)  # the reference is linear too: both finish
    red = R.Redactor()
    red.text(s)
    red.raw_json(s)
    red.b64(base64.b64encode(s.encode()).decode())


# --- a real client: Claude Code through `wirecap record` ------------------------------------------


@pytest.mark.realclient
@pytest.mark.skipif(_lab() is None, reason="lab not installed (no node_modules/.bin/claude)")
@pytest.mark.usefixtures("record_home")
def test_claude_code_prompt_is_stored_unaltered_and_its_key_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    lab = _lab()
    assert lab is not None
    root = Path(__file__).resolve().parents[2]
    fake = root / "tests" / "fixtures" / "lab" / "fake" / "fake_anthropic.py"
    pf = tmp_path / "fake.port"
    fake_proc = subprocess.Popen([sys.executable, str(fake), "--mode", "text", "--log", str(tmp_path / "fake.jsonl"),
                                  "--portfile", str(pf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    prompt = "run the disk-usage-report script on src/task-queue-worker.ts"
    key = "sk-ant-fake-0000000000000000"
    try:
        deadline = time.monotonic() + 20
        while not (pf.exists() and pf.read_text().strip()):
            assert time.monotonic() < deadline and fake_proc.poll() is None, "fake server did not start"
            time.sleep(0.1)
        port = int(pf.read_text())
        (tmp_path / "home").mkdir()
        (tmp_path / "work").mkdir()
        env = {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": key,
               "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "TERM": "dumb"}
        cap = tmp_path / "claude.jsonl"
        res = run_wirecap("record", "-o", str(cap), "--reverse", f"http://127.0.0.1:{port}", "--base-url-env",
                          "ANTHROPIC_BASE_URL", "--", str(lab / "node_modules" / ".bin" / "claude"), "-p", prompt,
                          "--output-format", "stream-json", "--verbose", timeout=180, cwd=str(tmp_path / "work"),
                          env=env)
    finally:
        fake_proc.terminate()
        fake_proc.wait(10)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    data = cap.read_bytes()
    assert key.encode() not in data and b"fake-0000000000000000" not in data
    _, recs, _ = read_capture(cap)
    opens = [r for r in recs if r["type"] == "open"]
    proc = next(r for r in opens if r["kind"] == "process")
    assert prompt in proc["argv"]  # argv as typed
    http_opens = [r for r in opens if r["kind"] == "http" and "x-api-key" in r.get("headers", {})]
    assert http_opens and all(r["headers"]["x-api-key"].startswith("«redacted:") for r in http_opens)
    # the prompt in the request body and on stdout, byte for byte
    bodies = [payload_bytes(r) for r in recs if r["type"] == "msg" and r.get("dir") == "c2s"
              and r["ch"].startswith("http")]
    assert any(prompt.encode() in b for b in bodies)
    assert not any("redacted" in (r.get("flags") or []) and prompt.encode() in payload_bytes(r)
                   and b"task-queue-worker" not in payload_bytes(r) for r in recs if r["type"] == "msg")
    assert data.count(b"run the disk-usage-report script on src/task-queue-worker.ts") >= 2
    _report(capsys, f"Claude Code via wirecap record: prompt stored unaltered ({data.count(prompt.encode())} places), "
            f"x-api-key redacted in {len(http_opens)} requests, key bytes in capture: 0")


@pytest.mark.usefixtures("record_home")
def test_record_websocket_frames_text_and_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Non-secrets in text and binary frames pass unaltered; secrets in binary frames (between control
    bytes, behind a length byte) and in a prompt frame's `authToken` are redacted; a 150 KB frame of `eyJ`
    (which once stalled the proxy's event loop for 25 s) goes through like any other."""
    import asyncio

    import websockets

    items = _chunks(50)
    text_frames = [json.dumps({"type": "action", "data": {"items": c}}, separators=(",", ":")) for c in items[:25]]
    bin_frames = [b"\x00\x01" + "\x1f".join(c).encode() + b"\xff" for c in items[25:]]
    token = next(s for k, s in SECRETS if k == "codebuff-key")
    sec_frames = [b"\x82\xd9" + bytes([len(s) % 256]) + s.encode() + b"\xa4next\x00" for _, s in SECRETS]
    prompt = json.dumps({"type": "action", "data": {"type": "prompt", "authToken": "plain-token-no-shape-1",
                                                    "prompt": f"use {token} on src/task-queue-worker.ts"}})
    adversarial = "eyJ" * 50_000

    async def echo(ws):
        async for m in ws:
            await ws.send(m)

    async def main():
        server = await websockets.serve(echo, "127.0.0.1", 0, max_size=1 << 24)
        port = server.sockets[0].getsockname()[1]
        with recorder(tmp_path, "--reverse", f"http://127.0.0.1:{port}") as rec:
            async with websockets.connect(f"ws://127.0.0.1:{rec.port}/ws", max_size=1 << 24) as c:
                for f in [*text_frames, *bin_frames, *sec_frames, prompt, adversarial]:
                    await c.send(f)
                    assert await asyncio.wait_for(c.recv(), 60) == f
            await asyncio.sleep(0.2)
            assert rec.stop() == 0, rec.stderr()
        server.close()
        return rec

    rec = asyncio.run(main())
    _, recs, _ = read_capture(rec.cap)
    msgs = [r for r in recs if r["type"] == "msg"]
    sent = [*text_frames, *bin_frames, *sec_frames, prompt, adversarial]
    got = [payload_bytes(m) for m in msgs]
    assert len(got) == 2 * len(sent)
    clean = [x for f in [*text_frames, *bin_frames] for x in (f, f)]
    assert [g for g in got[:len(clean)]] == [f.encode() if isinstance(f, str) else f for f in clean]
    assert got[-2:] == [adversarial.encode()] * 2
    data = rec.cap.read_bytes()
    missed = sorted({k for k, s in SECRETS if _leaks(data, s)})
    assert missed == [] and b"plain-token-no-shape-1" not in data
    assert b"src/task-queue-worker.ts" in data
    _report(capsys, f"wirecap record --reverse, WebSocket: {sum(len(c) for c in items)} non-secrets in 25 text and 25 binary "
            f"frames unaltered; {len(SECRETS)} secrets in binary frames + authToken/shape in a prompt frame: "
            f"missed {missed or 'none'}; 150 KB of eyJ passed")


# --- the pre-screens stay supersets under the new rules ------------------------------------------------
screen_pieces = st.one_of(
    st.sampled_from([s for _, s in SECRETS[::8]]),
    st.sampled_from([json_escape_ascii(s) for _, s in SECRETS[::8]]),
    st.sampled_from(["\\n", "\\t", "\\\\", "\\u0020", "\\u002d", "\\u00e9", " ", "-", "_", "é", "Bearer ",
                     "learned-secret-value-1", "lab-key-0000", "sk-", "eyJ", "task-queue"]),
    st.sampled_from(STRINGS[:3000]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(screen_pieces, max_size=8).map("".join), st.sampled_from(["json", "raw", "text"]),
       st.booleans())
def test_the_screens_flag_every_payload_redaction_would_change(s: str, form: str, learned: bool) -> None:
    from wirecap.capture.payload import encode_payload

    red = R.Redactor()
    if learned:
        red.learn_env({"OPENAI_API_KEY": "learned-secret-value-1", "X_TOKEN": "lab-key-0000"})
    if form == "json":
        data = json.dumps({"a": s}, separators=(",", ":")).encode()
    elif form == "raw":
        data = ('{"a" : "' + s.replace('"', "") + '"}').encode()
    else:
        data = s.replace("\n", " ").encode()
    record = {"seq": 1, "t": 0.0, "type": "msg", "ch": "stdout", "dir": "s2c", **encode_payload(data)}
    line = orjson.dumps(record)
    changed = R.redact_record(red, record) != record
    if changed:
        assert red.screen(line), line
        assert not R.chunk_is_clean(red, data + b"\n"), data


def test_a_secret_first_seen_late_counts_earlier_too_and_raw_matches_json(tmp_path: Path) -> None:
    """Learning order never makes `json` and `raw` differ, nor leaves an earlier occurrence in place."""
    key = next(s for k, s in SECRETS if k == "anthropic-key")
    body = key[len("sk-ant-api03-"):]
    r = R.Redactor()
    out = r.text(f"first {body} then {key}")
    assert body not in out and key not in out
    path = tmp_path / "c.jsonl"
    line = ('{"text": "see plain-Secret-value-9 and ' + body + '",  "apiKey": "plain-Secret-value-9", "k": "'
            + key + '"}').encode()
    with CaptureWriter(path, force=True) as w:
        w.msg("ws-1", "c2s", line)
    _, recs, _ = read_capture(path)
    msg = next(x for x in recs if x["type"] == "msg")
    assert orjson.loads(msg["raw"]) == msg["json"]
    data = path.read_bytes()
    assert b"plain-Secret-value-9" not in data and body.encode() not in data
