"""Redaction at write time: no secret's bytes reach the file, the same secret reads the same."""

from __future__ import annotations

import base64
import os
import re

import orjson
from conftest import run_wirecap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirecap.capture import CaptureReader, CaptureWriter, Redactor, payload_bytes
from wirecap.capture.redact import fingerprint
from wirecap.capture.schema import validate_capture_file

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER_NUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _s(alphabet: str, n: int, m: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=n, max_size=m or n)


def _digit(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Real keys of shapes whose body may hold "-" (or is short) hold a digit: the shape asks for one."""
    return st.tuples(strategy, st.sampled_from("0123456789")).map(lambda p: p[0][:-1] + p[1])


# One strategy per secret shape seen in real traffic (all fake), as realistic as the shapes ask.
SECRET_SHAPES = {
    "anthropic": _s(ALNUM + "_-", 20, 60).map(lambda s: "sk-ant-api03-" + s),
    "openai-proj": _digit(_s(ALNUM + "_-", 20, 60)).map(lambda s: "sk-proj-" + s),
    "openai": _digit(_s(ALNUM, 20, 48)).map(lambda s: "sk-" + s),
    "openrouter": _s("0123456789abcdef", 64).map(lambda s: "sk-or-v1-" + s),
    "codebuff": _digit(_s("0123456789abcdef", 64)).map(lambda s: "cb-pat-" + s),
    "github": _s(ALNUM, 36).map(lambda s: "ghp_" + s),
    "aws": _s(UPPER_NUM, 16).map(lambda s: "AKIA" + s),
    "google": _s(ALNUM + "_-", 35).map(lambda s: "AIza" + s),
    "slack": _s(ALNUM, 12, 40).map(lambda s: "xoxb-1234-" + s),
    "posthog": _s(ALNUM, 30, 43).map(lambda s: "phc_" + s),
    "jwt": st.tuples(_s(ALNUM, 10, 30), _s(ALNUM, 10, 30), _s(ALNUM + "_-", 10, 40)).map(
        lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"),
}
secrets = st.one_of(*SECRET_SHAPES.values())
filler = st.text(alphabet=ALNUM + " .,:;!?é", max_size=20).map(lambda s: s.strip() or "x")
SECRET_KEYS = ["authToken", "apiKey", "api_key", "token", "password", "secret", "x-api-key", "client_secret"]


def _embed(secret: str, before: str, after: str) -> str:
    return f"{before} {secret} {after}"


def _write(path, redactor, secret_list, fill):
    a, b = secret_list[0], secret_list[-1]
    with CaptureWriter(path, redactor=redactor,
                       origin={"tool": "wirecap", "argv": ["agent", "--api-key", a, f"--token={b}"]}) as w:
        w.open("proc", "process", argv=["agent", "--key", a, f"KEY={b}"], cwd="/tmp", env={"HOME": "/root"})
        w.open("http-1", "http", method="POST", url=f"http://127.0.0.1:1/v1/x?key={a}&other={b}",
               headers={"authorization": f"Bearer {a}", "x-api-key": b, "cookie": f"session={a}",
                        "user-agent": f"agent {fill}", "x-custom": _embed(b, fill, fill)})
        for i, s in enumerate(secret_list):
            key = SECRET_KEYS[i % len(SECRET_KEYS)]
            w.msg("http-1", "c2s", orjson.dumps({key: s, "nested": [{"text": _embed(s, fill, fill)}],
                                                 "authToken": {"value": s}}))
            w.msg("http-1", "c2s", (f'{{"pretty": "{_embed(s, fill, "")}",  "password" : "{s}"}}').encode())
            w.msg("http-1", "s2c", _embed(s, fill, fill))
            w.msg("http-1", "s2c", b"\xff\xfe binary " + s.encode() + b" \x00")
        w.response("http-1", 200, {"set-cookie": f"sid={a}", "content-type": "text/event-stream"})
        w.close_channel("http-1", status=200)
        w.error(f"failed with key {a}", where="test")
    return path.read_bytes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret_list=st.lists(secrets, min_size=1, max_size=6, unique=True), fill=filler)
def test_no_secret_bytes_reach_the_file(tmp_path, secret_list, fill):
    path = tmp_path / f"r-{os.urandom(4).hex()}.jsonl"
    data = _write(path, Redactor(), secret_list, fill)
    for s in secret_list:
        assert s.encode() not in data, s
        assert base64.b64encode(s.encode()) not in data
    assert validate_capture_file(path) == []
    # The same secret reads the same wherever it was: its fingerprint occurs more than once.
    for s in secret_list:
        assert data.count(fingerprint(s).encode()) >= 4, s
    with CaptureReader(path) as r:
        recs = list(r)
    assert r.header["redaction"]["enabled"] is True
    assert all("redacted" in rec["flags"] for rec in recs if rec["type"] == "msg")
    for rec in recs:
        if rec["type"] == "msg":
            for s in secret_list:
                assert s.encode() not in payload_bytes(rec)
            if "raw" in rec:  # the parsed form and the original got the same placeholders
                assert orjson.loads(rec["raw"]) == rec["json"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret_list=st.lists(secrets, min_size=1, max_size=3, unique=True), fill=filler)
def test_no_redact_keeps_secrets_and_says_so(tmp_path, secret_list, fill):
    path = tmp_path / f"n-{os.urandom(4).hex()}.jsonl"
    data = _write(path, Redactor(enabled=False), secret_list, fill)
    for s in secret_list:
        assert s.encode() in data
    with CaptureReader(path) as r:
        assert r.header["redaction"] == {"enabled": False}
    assert validate_capture_file(path) == []


def test_placeholder_shape_keeps_kind_and_is_stable_across_captures(tmp_path):
    key = "sk-ant-api03-" + "A" * 40
    outs = []
    for name in ("a.jsonl", "b.jsonl"):
        p = tmp_path / name
        with CaptureWriter(p) as w:
            w.open("http-1", "http", method="GET", url="http://127.0.0.1:1/", headers={"x-api-key": key})
            w.msg("http-1", "c2s", f"key {key} here")
        outs.append(p.read_bytes())
    ph = f"«redacted:anthropic-key:{fingerprint(key)}»".encode()
    assert all(ph in out for out in outs)
    assert all(f"«redacted:x-api-key:{fingerprint(key)}»".encode() in out for out in outs)


def test_extra_key_and_pattern_rules_via_the_cli(tmp_path):
    src = tmp_path / "out.jsonl"
    src.write_bytes(b'{"type":"x","myField":"hunter2","text":"ticket TCK-12345 here"}\n')
    cap = tmp_path / "cap.jsonl"
    res = run_wirecap("import", str(src), "-o", str(cap), "--redact-key", "myField",
                      "--redact-pattern", r"TCK-\d+")
    assert res.returncode == 0, res.stderr
    data = cap.read_bytes()
    assert b"hunter2" not in data and b"TCK-12345" not in data
    assert re.search(rb"\xc2\xabredacted:myfield:[0-9a-f]{8}\xc2\xbb", data)
    header = orjson.loads(data.split(b"\n", 1)[0])
    assert header["redaction"]["extra_keys"] == ["myField"]
    assert header["redaction"]["extra_patterns"] == [r"TCK-\d+"]
    res = run_wirecap("import", str(src), "-o", str(tmp_path / "raw.jsonl"), "--no-redact")
    assert res.returncode == 0
    raw = (tmp_path / "raw.jsonl").read_bytes()
    assert b"hunter2" in raw
    assert orjson.loads(raw.split(b"\n", 1)[0])["redaction"] == {"enabled": False}


def test_secret_keys_by_suffix_and_binary_payloads(tmp_path):
    path = tmp_path / "k.jsonl"
    with CaptureWriter(path) as w:
        w.open("proc", "process", argv=["agent"], env={"ANTHROPIC_API_KEY": "plainvalue123", "HOME": "/root"})
        w.msg("proc", "c2s", orjson.dumps({"db_password": "hunter2hunter2", "max_tokens": 5, "next_page_token": "p1"}))
        w.msg("proc", "c2s", b"\x00\xffkey=sk-ant-api03-" + b"Z" * 30 + b"\x00")
    data = path.read_bytes()
    assert b"plainvalue123" not in data and b"hunter2hunter2" not in data
    with CaptureReader(path) as r:
        msgs = [rec for rec in r if rec["type"] == "msg"]
    assert msgs[0]["json"]["max_tokens"] == 5 and msgs[0]["json"]["next_page_token"] == "p1"
    assert b"sk-ant-api03-" not in payload_bytes(msgs[1])
    assert payload_bytes(msgs[1]).startswith(b"\x00\xffkey=\xabredacted:anthropic-key:")  # latin-1 view
    assert msgs[1]["flags"] == ["redacted"]
