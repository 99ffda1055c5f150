"""The file `mitmdump -s` loads: `mitmdump -s $(wirecap addon-path) --set wirecap_out=cap.jsonl`.

Options: wirecap_out, wirecap_redact, wirecap_redact_key, wirecap_redact_pattern, wirecap_body_cap,
wirecap_force (see `mitmdump --options` once loaded, or docs/commands/record.md).
"""

import sys
from pathlib import Path

try:
    import wirecap  # noqa: F401
except ImportError:  # a mitmdump outside wirecap's environment: use the source tree beside us
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from wirecap.record.addon import WirecapAddon  # noqa: E402

addons = [WirecapAddon()]
