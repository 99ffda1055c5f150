"""wirecap's own certificate authority, for recording HTTPS through the proxy.

Kept in wirecap's config folder (`$WIRECAP_HOME`, else `~/.config/wirecap`) under `ca/`, in the
layout mitmproxy expects of a confdir (`mitmproxy-ca.pem` holds the private key, 0600), so the proxy
simply uses that folder. Created on first use; never shared with a user's own `~/.mitmproxy`.
"""

from __future__ import annotations

import os
from pathlib import Path

from wirecap.errors import WirecapError

BASENAME = "mitmproxy"  # mitmproxy's file naming inside a confdir
CA_ENV_VARS = ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CODEX_CA_CERTIFICATE")


def wirecap_home() -> Path:
    home = os.environ.get("WIRECAP_HOME")
    if home:
        return Path(home).expanduser()
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser() / "wirecap"


def ca_dir() -> Path:
    """The confdir handed to mitmproxy."""
    return wirecap_home() / "ca"


def ca_cert_path() -> Path:
    """The public certificate (PEM) clients are told to trust."""
    return ca_dir() / f"{BASENAME}-ca-cert.pem"


def ensure_ca() -> Path:
    """Create the CA if it is not there yet; returns the confdir. Private key ends up 0600."""
    d = ca_dir()
    key = d / f"{BASENAME}-ca.pem"
    if not key.exists():
        try:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            from mitmproxy import certs

            certs.CertStore.create_store(d, BASENAME, 2048, organization="wirecap", cn="wirecap recording CA")
        except OSError as e:
            raise WirecapError(f"{d}: cannot create wirecap's CA: {e.strerror or e}") from None
    try:
        for p in (key, d / f"{BASENAME}-ca.p12"):
            if p.exists() and p.stat().st_mode & 0o077:
                os.chmod(p, 0o600)
    except OSError as e:
        raise WirecapError(f"{key}: cannot restrict permissions: {e.strerror or e}") from None
    return d


def ca_env() -> dict[str, str]:
    """Variables that make Node, Python (requests, ssl), curl-like tools and Codex trust the CA."""
    cert = str(ca_cert_path())
    return dict.fromkeys(CA_ENV_VARS, cert)
