"""`wirecap record -- codex` as a forward proxy (HTTPS_PROXY) with wirecap's CA: Codex's Responses WebSocket
over wss, decrypted and recorded exactly.

Codex 0.169.0 sends its WebSocket upgrade through HTTPS_PROXY (a CONNECT tunnel) and checks the proxy's
certificate against CODEX_CA_CERTIFICATE, else SSL_CERT_FILE (either one is enough; `wirecap record`
sets both to the system roots plus its CA). Its base_url is https:// on a TLS terminator in front of
the loopback fake (tests/codexws_record.py, inside `unshare -n`; the proxy trusts the terminator's
self-signed certificate with --ssl-insecure). Skipped without the lab or root; the last test needs
neither (a Python client that does not trust the CA).
"""

from __future__ import annotations

import http.client
import ssl
import sys
from pathlib import Path

import pytest
from record_util import read_capture, record_home, recorder  # noqa: F401
from test_record_codex_ws import _WHY_SKIP, run_codex

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

needs_lab = pytest.mark.skipif(_WHY_SKIP is not None, reason=_WHY_SKIP or "")


@pytest.mark.realclient
@needs_lab
@pytest.mark.parametrize(("mode", "deflate"), [("text", True), ("tool", False)])
def test_codex_wss_through_the_forward_proxy_recorded_exactly(tmp_path, mode, deflate):
    res = run_codex("proxy", mode, tmp_path / "run", deflate=deflate)
    assert res["ok"], res["why"]  # messages, times, handshake (url wss://...) as the fake saw them
    assert res["record_rc"] == 0 and not res["fallback_message"] and res["http_responses_calls"] == 0
    assert res["tls_connections"] >= 1  # the proxy reached the fake over TLS (the client's wss, re-encrypted)
    assert res["connections"] == 1 and res["c2s"] == (3 if mode == "tool" else 2)
    assert res["bytes_recorded"] == res["bytes_sent"] > 0
    assert (res["wire_bytes"] < res["bytes_sent"]) == deflate
    _, records, _ = read_capture(tmp_path / "run" / "cap.jsonl")
    proc = next(r for r in records if r["type"] == "open" and r["kind"] == "process")
    assert "HTTPS_PROXY" in proc["env"] and "CODEX_CA_CERTIFICATE" in proc["env"]


@pytest.mark.realclient
@needs_lab
def test_codex_without_wirecaps_ca_refuses_the_proxy_and_the_capture_says_so(tmp_path):
    """Without CODEX_CA_CERTIFICATE and SSL_CERT_FILE, Codex rejects the proxy's certificate (so the runs
    above really verified it against wirecap's CA); each refused handshake is an `error` record."""
    out = tmp_path / "run"
    res = run_codex_unset(out)
    assert res["connections"] == 0 and res["messages_recorded"] == 0
    assert "UnknownIssuer" in (out / "stdout.jsonl").read_text()
    _, records, reader = read_capture(out / "cap.jsonl")
    errs = [r for r in records if r["type"] == "error" and r.get("where") == "addon.tls_failed_client"]
    assert errs and all("wirecap's CA" in e["message"] and "127.0.0.1" in e["message"] for e in errs)
    assert reader.end is not None and reader.end["errors"] >= len(errs)


def run_codex_unset(out: Path) -> dict:
    import json
    import subprocess

    from test_record_codex_ws import RUNNER, _env, lab_dir

    argv = [sys.executable, str(RUNNER), "proxy", "text", str(out), "--unset=CODEX_CA_CERTIFICATE",
            "--unset=SSL_CERT_FILE", "--timeout=8"]
    r = subprocess.run(argv, capture_output=True, timeout=120, env={**_env(), "WIRECAP_LAB": str(lab_dir("codex"))})
    assert (out / "result.json").exists(), (r.stdout + r.stderr).decode(errors="replace")[-3000:]
    return json.loads((out / "result.json").read_text())


@pytest.mark.usefixtures("record_home")
def test_a_client_refusing_the_proxy_certificate_is_an_error_record(tmp_path):
    """A client that does not trust wirecap's CA: no flow ever starts, yet the capture says what happened."""
    from codexws_record import TlsTerminator, self_signed

    server = TlsTerminator(0, 9, *self_signed(tmp_path))  # a TLS server (what follows its handshake: nothing)
    port = server.sock.getsockname()[1]
    try:
        with recorder(tmp_path, "--ssl-insecure") as rec:
            conn = http.client.HTTPSConnection("127.0.0.1", rec.port, timeout=10, context=ssl.create_default_context())
            conn.set_tunnel("localhost", port)
            with pytest.raises(ssl.SSLCertVerificationError):
                conn.request("GET", "/v1/responses")
            conn.close()
            assert rec.stop() == 0
    finally:
        server.close()
    _, records, reader = read_capture(rec.cap)
    errs = [r for r in records if r["type"] == "error"]
    assert len(errs) == 1 and errs[0]["where"] == "addon.tls_failed_client"
    assert "localhost" in errs[0]["message"]
    assert "wirecap ca" in errs[0]["message"]
    assert reader.end is not None and reader.end["errors"] == 1
    assert not [r for r in records if r["type"] == "open"]
