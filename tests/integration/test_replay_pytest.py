"""The `wirecap_server` pytest fixture, used by a real pytest run (pytester) in a subprocess."""

from __future__ import annotations

import pytest
from replay_support import import_sample

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(120)

TEST_FILE = '''
import asyncio, json
import orjson
from websockets.asyncio.client import connect

CAP = {cap!r}

def frames():
    with open(CAP, "rb") as f:
        recs = [orjson.loads(x) for x in f][1:]
    return [r for r in recs if r.get("type") == "msg"]

async def talk(url, change):
    c2s = [m["json"] for m in frames() if m["dir"] == "c2s"]
    if change:
        c2s[1]["data"]["messages"][0]["content"] = "say goodbye"
    out = []
    async with connect(url.replace("http://", "ws://") + "/ws") as ws:
        await ws.send(orjson.dumps(c2s[0]).decode())
        out += [await asyncio.wait_for(ws.recv(), 10) for _ in range(2)]
        await ws.send(orjson.dumps(c2s[1]).decode())
        try:
            while not out or "response-complete" not in out[-1]:
                out.append(await asyncio.wait_for(ws.recv(), 10))
        except Exception:
            pass
    return out

def test_hello_replayed(wirecap_server):
    url = wirecap_server(CAP)
    got = asyncio.run(talk(url, change=False))
    assert json.loads(got[-1])["data"]["type"] == "response-complete"

def test_changed_prompt_fails(wirecap_server):
    url = wirecap_server(CAP)
    asyncio.run(talk(url, change=True))   # the client swallows the 1008; the fixture must not
'''


def test_fixture_passes_a_faithful_client_and_fails_a_changed_one(pytester, tmp_path):
    cap = import_sample("codebuff115_hello_ws_frames.jsonl", tmp_path / "hello.jsonl")
    pytester.makepyfile(test_agent=TEST_FILE.format(cap=str(cap)))
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*test_changed_prompt_fails*",
        "*wirecap replay: 1 unmatched client message*",
        "*closest recorded candidate: seq *",
        # the aligned rendering `replay serve` prints, one line per difference
        '*~ data.messages[[]0[]].content: recorded "say hello", live "say goodbye"',
    ])
