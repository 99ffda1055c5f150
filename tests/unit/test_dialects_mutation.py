"""Seeded mutations of real captures: a few values anywhere in their messages replaced by odd JSON (a
list where a type name was, a number where parts were, ...). Decoding, validation, stats and the
transport check must never raise, and no decoder may fail on a record (`decoder-error`): what a decoder
does not understand is `unparsed`, never a crash. Each test pins the seeds that found a bug."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

from wirecap.analysis.stats import stats_records
from wirecap.analysis.transport import transport_records
from wirecap.analysis.validate import validate_records
from wirecap.capture.reader import CaptureReader

FIX = Path(__file__).resolve().parents[1] / "fixtures"
_ODD = [None, 1, -1, 1.5, "", "x", [], {}, [1], {"a": 1}, True, "response.create", "error", {"type": "error"}, "resp_x"]


def _odd(rnd: random.Random) -> Any:
    return json.loads(json.dumps(rnd.choice(_ODD)))  # a fresh copy: a later mutation must not reach _ODD


def _mutate(o: Any, rnd: random.Random) -> None:
    """Replace one value somewhere inside `o` with an odd JSON value."""
    if isinstance(o, dict) and o:
        k = rnd.choice(list(o))
        if rnd.random() < 0.5:
            o[k] = _odd(rnd)
        else:
            _mutate(o[k], rnd)
    elif isinstance(o, list) and o:
        i = rnd.randrange(len(o))
        if rnd.random() < 0.5:
            o[i] = _odd(rnd)
        else:
            _mutate(o[i], rnd)


def _load(paths: list[Path]) -> dict[str, list[dict[str, Any]]]:
    base = {}
    for p in sorted(paths):
        with CaptureReader(str(p)) as r:
            base[p.name] = list(r)
    return base


def _fuzz(base: dict[str, list[dict[str, Any]]], seeds: list[int]) -> list[tuple[int, str]]:
    """(seed, message) of every `decoder-error` over seeded mutations of the captures `base`."""
    keys = sorted(base)
    failed = []
    for seed in seeds:
        rnd = random.Random(seed)
        recs = copy.deepcopy(base[rnd.choice(keys)])
        for _ in range(rnd.randint(1, 6)):
            r = rnd.choice(recs)
            if isinstance(r.get("json"), (dict, list)):
                _mutate(r["json"], rnd)
        failed += [(seed, f.message) for f in validate_records(recs) if f.rule == "decoder-error"]
        stats_records(recs)
        check = transport_records(recs)
        check.summary()
        check.findings()
    return failed


def test_codex_over_websocket() -> None:
    """The real Codex WS captures (with Codex's stdout): seeds 833 and 1136 found an item type that is a
    dict or a list in codex-exec, 2686 an input item type that is a list in the orphan-output check, 1859
    message content parts that are not a list."""
    base = _load(list((FIX / "codex_ws").glob("*.jsonl.zst")))
    assert _fuzz(base, [*range(200), 833, 1136, 1859, 2686]) == []


def test_http_responses() -> None:
    """The HTTP + SSE Responses captures (the state machine both transports share): seed 937 found
    message content parts that are not a list."""
    assert _fuzz(_load(list((FIX / "captures").glob("http_openai_responses_*.jsonl"))), [*range(200), 937]) == []


def test_anthropic_family() -> None:
    """Claude Code, CodeBuddy and Anthropic SSE captures: seeds 6, 58, 124 and 173 (among others) found
    a line `type` and a delta `type` that are a list or a dict."""
    caps = FIX / "captures"
    paths = [*caps.glob("claude_code_*.jsonl"), *caps.glob("codebuddy_*.jsonl"), *caps.glob("http_anthropic_*.jsonl")]
    assert _fuzz(_load(paths), list(range(200))) == []


def test_a_content_block_type_that_is_an_object() -> None:
    """Found on the shipped captures (seed 371 over all of them): an assistant line whose content block
    `type` is an object made claude-code fail on the record; now the block is `unparsed`."""
    recs = copy.deepcopy(_load([FIX / "captures" / "claude_code_hello.jsonl"])["claude_code_hello.jsonl"])
    line = next(r for r in recs if (r.get("json") or {}).get("type") == "assistant")
    line["json"]["message"]["content"][0]["type"] = {"type": "tool_use"}
    assert [f for f in validate_records(recs) if f.rule == "decoder-error"] == []


def test_an_anthropic_body_block_type_that_is_a_list() -> None:
    """Found by seeds 96178 and 99970 over all shipped captures: a non-streamed Anthropic message body
    whose content block `type` is a list or an object made anthropic-sse fail on the record."""
    recs = copy.deepcopy(_load([FIX / "captures" / "http_anthropic_text.jsonl"])["http_anthropic_text.jsonl"])
    body = {"type": "message", "id": "msg_1", "model": "m", "role": "assistant",
            "content": [{"type": ["text"], "text": "hi"}], "usage": {"input_tokens": 1, "output_tokens": 1}}
    recs = [r for r in recs if not (r.get("type") == "msg" and r.get("dir") == "s2c")]
    at = next(i for i, r in enumerate(recs) if r.get("type") == "response")
    recs[at] = {k: v for k, v in recs[at].items() if k != "sse"}  # a JSON body, not a stream
    recs.insert(at + 1, {"t": recs[at]["t"], "type": "msg", "ch": "http-1", "dir": "s2c", "json": body})
    recs = [{**r, "seq": i} for i, r in enumerate(recs, 1)]
    found = validate_records(recs)
    assert [f for f in found if f.rule == "decoder-error"] == []
    assert any(f.rule == "unparsed" for f in found)
