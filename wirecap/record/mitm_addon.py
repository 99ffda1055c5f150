"""The file `mitmdump -s` loads: `mitmdump --listen-host 127.0.0.1 -s $(wirecap addon-path) --set wirecap_out=cap.jsonl`.

Without `--listen-host` the addon makes mitmproxy listen on 127.0.0.1 (not on every interface).

Options: wirecap_out, wirecap_redact, wirecap_redact_key, wirecap_redact_pattern, wirecap_body_cap,
wirecap_force (see `mitmdump --options` once loaded, or docs/commands/record.md).
"""

import sys
from pathlib import Path

# Not a guard on a sibling module: this file is loaded by a `mitmdump` that may run outside wirecap's
# environment (another venv, a system mitmproxy), where `wirecap` is not importable at all; then the
# source tree this file lives in is put on the path. Inside the environment it is a no-op.
try:
    import wirecap  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecap.record.addon import WirecapAddon  # noqa: E402

addons = [WirecapAddon()]
