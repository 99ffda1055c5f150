"""wirecap's own certificate authority, for recording HTTPS through the proxy.

Kept in wirecap's config folder (`$WIRECAP_HOME`, else `~/.config/wirecap`) under `ca/`, in the
layout mitmproxy expects of a confdir (`mitmproxy-ca.pem` holds the private key, 0600), so the proxy
simply uses that folder. Created on first use; never shared with a user's own `~/.mitmproxy`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from wirecap.errors import WirecapError
from wirecap.fsmode import DIR_MODE, FILE_MODE, private_dir, write_private

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
    """Create the CA if it is not there yet; returns the confdir (0700, its files 0600: `fsmode`)."""
    d = ca_dir()
    key = d / f"{BASENAME}-ca.pem"
    if not key.exists():
        try:
            private_dir(d)
            from mitmproxy import certs

            old = os.umask(0o077)  # mitmproxy writes the files with the umask's modes
            try:
                certs.CertStore.create_store(d, BASENAME, 2048, organization="wirecap", cn="wirecap recording CA")
            finally:
                os.umask(old)
        except OSError as e:
            raise WirecapError(f"{d}: cannot create wirecap's CA: {e.strerror or e}") from None
    try:  # a CA made by an older wirecap (or under another umask): owner-only too
        if stat.S_IMODE(d.stat().st_mode) & 0o077:
            os.chmod(d, DIR_MODE)
        for p in d.iterdir():
            if p.is_file() and not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) & 0o077:
                os.chmod(p, FILE_MODE)
    except OSError as e:
        raise WirecapError(f"{d}: cannot restrict permissions: {e.strerror or e}") from None
    return d


def ca_bundle_path() -> Path:
    """System trust roots plus wirecap's CA, for variables that replace the trust store."""
    return ca_dir() / "wirecap-ca-bundle.pem"


def _system_bundle() -> bytes:
    import ssl

    candidates = [ssl.get_default_verify_paths().cafile, "/etc/ssl/certs/ca-certificates.crt",
                  "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
    try:  # a third-party package (mitmproxy's dependency today): used when there, never required
        import certifi

        candidates.append(certifi.where())
    except ImportError:
        pass
    for c in candidates:
        if c and os.path.isfile(c):
            try:
                return Path(c).read_bytes()
            except OSError:
                continue
    return b""


def ensure_bundle() -> Path:
    """(Re)build the combined bundle when it is missing or older than the CA."""
    ensure_ca()
    bundle, cert = ca_bundle_path(), ca_cert_path()
    if not bundle.exists() or bundle.stat().st_mtime < cert.stat().st_mtime:
        system = _system_bundle()
        write_private(bundle, system + (b"" if system.endswith(b"\n") or not system else b"\n") + cert.read_bytes())
    return bundle


def ca_env() -> dict[str, str]:
    """Variables that make Node (added roots), Python/OpenSSL and Codex (whole bundle) trust the CA.

    SSL_CERT_FILE, REQUESTS_CA_BUNDLE and CODEX_CA_CERTIFICATE replace the trust store, so they get
    the system roots plus wirecap's CA; NODE_EXTRA_CA_CERTS adds to Node's roots, so it gets the CA.
    """
    bundle = str(ensure_bundle())
    return {
        "NODE_EXTRA_CA_CERTS": str(ca_cert_path()),
        "SSL_CERT_FILE": bundle,
        "REQUESTS_CA_BUNDLE": bundle,
        "CODEX_CA_CERTIFICATE": bundle,
    }
