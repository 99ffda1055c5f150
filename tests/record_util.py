"""Helpers for the recorder tests: run `wirecap record` as a real subprocess on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from wirecap.capture.reader import CaptureReader

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def record_home(tmp_path_factory) -> Path:
    """A private WIRECAP_HOME (its CA is made once per session), never the user's config folder."""
    home = tmp_path_factory.mktemp("wirecap-home")
    os.environ["WIRECAP_HOME"] = str(home)
    return home


@dataclass
class Recorder:
    port: int
    cap: Path
    proc: subprocess.Popen[bytes]
    stderr_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("recorder did not stop within the timeout") from None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@contextlib.contextmanager
def recorder(tmp_path: Path, *args: str, name: str = "cap.jsonl", preexec_fn=None,
             env: dict[str, str] | None = None) -> Iterator[Recorder]:
    """`wirecap record -o CAP --listen 127.0.0.1:0 --port-file F ARGS`, stopped with SIGTERM after."""
    cap = tmp_path / name
    pf = tmp_path / f"{name}.port"
    errp = tmp_path / f"{name}.stderr"
    full_env = dict(os.environ)
    full_env.update(env or {})
    with open(errp, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "wirecap", "record", "-o", str(cap), "--listen", "127.0.0.1:0",
             "--port-file", str(pf), *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=full_env,
            preexec_fn=preexec_fn,
        )
    rec = None
    try:
        deadline = time.monotonic() + 30
        while not (pf.exists() and pf.read_text().strip()):
            if proc.poll() is not None:
                raise AssertionError(f"recorder exited early ({proc.returncode}): {errp.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"recorder did not listen within 30 s: {errp.read_text()}")
            time.sleep(0.05)
        rec = Recorder(int(pf.read_text()), cap, proc, errp)
        yield rec
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def read_capture(path: Path) -> tuple[dict, list[dict], CaptureReader]:
    with CaptureReader(path) as r:
        records = list(r)
    return r.header, records, r


def channel(records: list[dict], ch: str) -> list[dict]:
    return [r for r in records if r.get("ch") == ch]


def self_signed_cert(d: Path) -> Path:
    """An upstream server certificate for 127.0.0.1 from a throwaway CA (not wirecap's)."""
    from cryptography.hazmat.primitives import serialization
    from mitmproxy import certs

    store = certs.CertStore.from_store(d, "upstream", 2048)
    entry = store.get_cert("127.0.0.1", [], None)
    (d / "cert.pem").write_bytes(entry.cert.to_pem())
    (d / "key.pem").write_bytes(entry.privatekey.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    return d
