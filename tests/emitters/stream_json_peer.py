"""A stream-json conversation partner (like `claude -p --input-format stream-json`).

For every JSON user message read from stdin, prints an `assistant` line echoing its text and then a
`result` line; stops at EOF.
"""

import json
import sys

turn = 0
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if msg.get("type") != "user":
        continue
    turn += 1
    content = msg["message"]["content"]
    text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
    out = {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": f"you said: {text}"}]}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.write(json.dumps({"type": "result", "subtype": "success", "num_turns": turn}) + "\n")
    sys.stdout.flush()
