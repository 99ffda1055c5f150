"""Values volatile by shape (wirecap.analysis.idshape): generated ids, times and ports are masked as
substrings, ordinary words, identifiers, paths, model names and numbers never are; the environment
(cwd, HOME, TMPDIR) is learned per side; replay matching and diff use the same rules."""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirecap.analysis.diff import diff_captures
from wirecap.analysis.idshape import EnvMask, mask_json, mask_text, mask_value
from wirecap.replay.match import Matcher

RUNS = Path(__file__).parents[1] / "fixtures" / "captures" / "runs"
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
HEXD = "0123456789abcdef"


def _masked(s: str) -> bool:
    return mask_text(s) != s and mask_json(orjson.dumps(s)) != orjson.dumps(s)


# --- ids are masked ---------------------------------------------------------------------------------
# (a UUID is found from its first digit: one of 10^13 random UUIDs has none and is not masked)
uuids = st.integers(0, 2**128 - 1).map(lambda n: str(uuid.UUID(int=n))).filter(lambda u: any(c.isdigit() for c in u))
ulids = st.tuples(st.sampled_from("01234567"), st.text(CROCKFORD, min_size=25, max_size=25)).map("".join).filter(
    lambda s: any(c.isalpha() for c in s))
hexes = st.text(HEXD, min_size=16, max_size=64).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s))
vendor = st.sampled_from(["msg_", "toolu_", "call_", "resp_", "chatcmpl-", "fc_", "rs_", "req_", "run_", "ses_"])
prefixed = st.tuples(vendor, st.text(B62, min_size=16, max_size=40).filter(
    lambda s: any(c.isdigit() for c in s))).map("".join)  # (an id needs a digit)
times = st.datetimes(min_value=__import__("datetime").datetime(2001, 1, 1),
                     max_value=__import__("datetime").datetime(2099, 1, 1)).map(
    lambda d: d.isoformat(timespec="milliseconds") + "Z")
ids = uuids | ulids | hexes | prefixed | times | uuids.map(lambda u: "msg_" + u)


@settings(max_examples=400, deadline=None)
@given(ids, st.sampled_from(["{}", "see {} now", "id={}\n", "({})", "a\n{}"]))
def test_generated_ids_are_masked_as_substrings(value, around):
    s = around.format(value)
    assert value not in mask_text(s)
    assert value.encode() not in mask_json(orjson.dumps(s))
    # the words around the id are kept
    for word in around.replace("{}", " ").split():
        assert word in mask_text(s)


def test_each_shape_and_its_placeholder():
    assert mask_text("msg_5fbd64d2-c0cd-5756-9e7f-69d9cb045d7a") == "msg_<uuid>"
    assert mask_text("01ARZ3NDEKTSV4RRFFQ69G5FAV") == "<ulid>"
    assert mask_text("04673da466324136b527d9b57bdb14c9") == "<hex>"
    assert mask_text("toolu_01A09q90qw90lq917835lq9") == "toolu_<id>"
    assert mask_text("call_2799251657") == "call_<id>"
    assert mask_text("see run_25718dc81ab34c2b80ff0a8b/steps") == "see run_<id>/steps"
    assert mask_text("on 2026-11-25T06:01:03.572Z, today 2026-11-25.") == "on <time>, today <date>."
    assert mask_text("connect ECONNREFUSED 127.0.0.1:49891") == "connect ECONNREFUSED 127.0.0.1:<port>"
    assert mask_text("http://localhost:8080/v1") == "http://localhost:<port>/v1"
    assert mask_text("Chunk ID: 9e2e36\nWall time") == "Chunk ID: <id>\nWall time"
    # Claude Code's usage block of a subagent, in the Agent tool's result (captures/claude-code-2.1.197-subagent)
    assert mask_text("tool_uses: 1\nduration_ms: 432</usage>") == "tool_uses: 1\nduration_ms: <ms></usage>"
    assert mask_text("max_duration_ms: 4321x") == "max_duration_ms: 4321x"
    assert b"\\nduration_ms: <ms><" in mask_json(orjson.dumps({"text": "1\nduration_ms: 432</usage>"}))


# --- ordinary values are not ---------------------------------------------------------------------------
WORDS = ["read", "file", "run", "the", "disk", "usage", "report", "task", "queue", "worker", "message", "tool",
         "call", "session", "backup", "get", "weather", "forecast", "test", "case", "msg", "id", "hello"]
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)
identifiers = (words.map("_".join) | words.map("-".join)
               | words.map(lambda ws: ws[0] + "".join(w.capitalize() for w in ws[1:])))
paths = st.lists(identifiers, min_size=1, max_size=5).map(lambda xs: "/" + "/".join(xs) + ".py")
small_numbers = st.integers(0, 10**8).map(str)
with_numbers = st.tuples(identifiers, st.integers(0, 99999)).map(lambda t: f"{t[0]}{t[1]}")
MODELS = ["claude-opus-4-8", "claude-3-5-sonnet-20241022", "gpt-4o-2024-08-06", "gpt-5.5", "fake-model",
          "default-model", "claude-opus-4-8[1m]", "o3-mini", "chatcmpl-fake-1", "user_fake_000", "v2.1.197"]
ordinary = identifiers | paths | small_numbers | with_numbers | st.sampled_from(MODELS) | st.text(
    "abcdefghijklmnopqrstuvwxyz ,.", max_size=60)


@settings(max_examples=600, deadline=None)
@given(ordinary)
def test_ordinary_strings_are_never_ids(s):
    assert mask_text(s) == s
    assert mask_json(orjson.dumps(s)) == orjson.dumps(s)
    assert mask_json(orjson.dumps({"name": s, "input_tokens": 123})) == orjson.dumps({"name": s, "input_tokens": 123})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["input_tokens", "output_tokens", "count", "size", "num_turns", "total"]),
       st.integers(0, 10**19))
def test_numbers_outside_time_fields_are_kept(key, n):
    b = orjson.dumps({key: n})
    assert mask_json(b) == b


@pytest.mark.parametrize("key", ["timestamp", "createdAt", "created", "sent_at", "lastReadTime", "start", "end"])
def test_epochs_in_time_fields_are_masked(key):
    for n in (1764050463, 1764050463572, 1764050463.572):
        assert orjson.loads(mask_json(orjson.dumps({key: n}))) == {key: "<time>"}
    assert orjson.loads(mask_json(orjson.dumps({key: 42}))) == {key: 42}  # not an epoch


@pytest.mark.parametrize("key", ["x-codex-ws-stream-request-start-ms", "turn_started_at_unix_ms", "startMs",
                                 "created_at_s", "request-end", "sentAtMillis", "timestamp_ms"])
def test_epochs_under_segmented_and_unit_suffixed_time_keys_are_masked(key):
    """A time word as the last segment of a dashed/underscored key, followed by an epoch and a unit (Codex's
    `client_metadata`: `x-codex-ws-stream-request-start-ms`, a string of digits; `turn_started_at_unix_ms`
    inside the JSON of its turn-metadata header), masks an epoch, a number or a string of digits."""
    for n in (1795611759254, "1795611759254"):
        assert orjson.loads(mask_json(orjson.dumps({key: n}))) == {key: "<time>"}
    assert orjson.loads(mask_json(orjson.dumps({key: "42"}))) == {key: "42"}  # not an epoch
    assert orjson.loads(mask_json(orjson.dumps({key: "1795611759254 ms"}))) == {key: "1795611759254 ms"}
    # JSON inside a JSON string (a header's value): the epoch is masked there too, the outer JSON intact
    inner = orjson.dumps({key: 1795611759246, "window_number": 1795611759}).decode()
    out = orjson.loads(mask_json(orjson.dumps({"meta": inner})))
    assert out == {"meta": '{"' + key + '":<time>,"window_number":1795611759}'}
    assert mask_text(inner) == out["meta"]  # (text masking agrees)
    assert mask_text(f"{key}=1795611759 done") == f"{key}=<time> done"


@pytest.mark.parametrize("key", ["x-codex-window-id-ms", "input_tokens_ms", "times", "startup", "backend"])
def test_keys_that_only_look_like_time_keys_keep_their_numbers(key):
    b = orjson.dumps({key: 1795611759254, "n": "1795611759254"})
    assert mask_json(b) == b
    assert mask_text(f"{key}=1795611759 done") == f"{key}=1795611759 done"


def test_id_named_keys_hold_random_values_only():
    v = {"promptId": "wkyyyxk9byj", "fingerprintId": "codebuff-sdk-4hsrty8or5j", "model_id": "claude-opus-4-8",
         "agentId": "fake-helper", "user_id": "user_fake_000"}
    assert mask_value(v) == {**v, "promptId": "<id>", "fingerprintId": "<id>"}


def test_id_named_keys_in_log_text_hold_random_values_only():
    """A request dumped by util.inspect or a log line (`client_id: '0uaukw5ylmh'`, seen on the Codebuff SDK
    0.10 stderr) masks the id as JSON does; the same key with a word, or another key, keeps its value."""
    assert mask_text("      client_id: '0uaukw5ylmh',") == "      client_id: '<id>',"
    assert mask_text('runId=ab12cd34ef56 done') == "runId=<id> done"
    assert mask_text('"promptId": "x9y8z7w6v5"') == '"promptId": "<id>"'
    for kept in ("client_id: 'abcdefghijk',", "model: 'gpt4o2024abc'", "token_count: 12345678",
                 "client_id: 'ab1'", "name: 'worker12345'"):
        assert mask_text(kept) == kept
        assert mask_json(orjson.dumps({"text": kept})) == orjson.dumps({"text": kept})
    # inside a JSON string (a stderr line in an event), escaped quotes and all
    assert mask_json(orjson.dumps({"text": "  client_id: '0uaukw5ylmh',"})) == b'{"text":"  client_id: \'<id>\',"}'
    assert mask_json(orjson.dumps({"t": 'say "promptId": "x9y8z7w6v5"'})) == b'{"t":"say \\"promptId\\": \\"<id>\\""}'


# --- the environment ---------------------------------------------------------------------------------------
def test_env_learned_from_fragments_and_masked_as_whole_paths():
    env = EnvMask()
    env.learn("Primary working directory: /tmp/lab/work_main\nIs directory a git repo: No")
    env.learn("memory at `/tmp/lab/home/claude/.claude/projects/-tmp-lab-work-main/memory`")
    env.learn("Use `/tmp/lab/tmpdir/opencode` for temporary work")
    assert env.apply_text("cd /tmp/lab/work_main/src && ls /tmp/lab/work_mainx") == "cd <cwd>/src && ls /tmp/lab/work_mainx"
    assert env.apply_text("/tmp/lab/home/claude/.claude/projects/-tmp-lab-work-main/x") == "<home>/.claude/projects/-<cwd>/x"
    assert env.apply_text("projects/tmp-lab-work_main/memory") == "projects/<cwd>/memory"  # CodeBuddy's slug
    assert env.apply_text("`/tmp/lab/tmpdir/opencode`") == "`<tmp>`"
    short = EnvMask()
    short.add("home", "/")  # too short to be safe
    assert short.apply_text("/usr/bin") == "/usr/bin"


# --- replay matching: the same rules -----------------------------------------------------------------------
def _codex_request(ids: tuple[str, str], cwd: str, home: str, prompt: str) -> dict:
    return {"model": "gpt-5.5", "prompt_cache_key": ids[0], "input": [
        {"type": "message", "id": f"msg_{ids[1]}", "role": "developer",
         "content": [{"type": "input_text", "text": f"- `r0` = `{home}/.codex/skills/.system`"}]},
        {"type": "message", "id": f"msg_{ids[0]}", "role": "user",
         "content": [{"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n  "
                                                    "<current_date>2026-11-22</current_date>"}]},
        {"type": "function_call_output", "call_id": "call_x", "output": "Chunk ID: 9e2e36\nWall time: 0.0 seconds"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}]}


def test_matcher_ignores_ids_env_and_dates_but_not_the_prompt():
    rec = _codex_request((str(uuid.uuid4()), str(uuid.uuid4())), "/work/a", "/home/a", "say hello")
    live = _codex_request((str(uuid.uuid4()), str(uuid.uuid4())), "/tmp/b/work", "/root/b", "say hello")
    live["input"][1]["content"][0]["text"] = live["input"][1]["content"][0]["text"].replace("11-22", "12-01")
    live["input"][2]["output"] = "Chunk ID: 522acc\nWall time: 0.0 seconds"
    m = Matcher(dialect="openai-responses-sse")
    assert m.same(live, rec), m.diffs(live, rec)
    other = _codex_request((str(uuid.uuid4()), str(uuid.uuid4())), "/tmp/b/work", "/root/b", "say goodbye")
    m2 = Matcher(dialect="openai-responses-sse")
    assert not m2.same(other, rec)
    assert [p for p, _, _ in m2.diffs(other, rec)] == ["input[3].content[0].text"]
    assert not Matcher(dialect="openai-responses-sse", shapes=False).same(live, rec)


# --- diff: committed real captures of two runs --------------------------------------------------------------
PAIRS = ["cb115-hello", "cb115-tool", "sdk03-tool", "sdk10-hello", "codex-hello"]


@pytest.mark.parametrize("level", ["events", "wire"])
@pytest.mark.parametrize("case", PAIRS)
def test_two_real_runs_diff_equal(case, level):
    """Recorded twice with the real client (other HOME and working directory, minutes apart)."""
    r = diff_captures(str(RUNS / f"{case}-a.jsonl"), str(RUNS / f"{case}-b.jsonl"), level=level, context_notes=False)
    assert r.equal, [(c.kind, c.fields) for p in r.pairs for c in p.changes][:5]



@pytest.mark.parametrize(("case", "level"), [("codex-hello", "wire"), ("cb115-tool", "events"),
                                             ("sdk10-hello", "wire"), ("sdk03-tool", "events")])
def test_without_shapes_the_same_runs_differ(case, level):
    """What the shape rules hide is real run-to-run change (ids, paths, ports, dates)."""
    r = diff_captures(str(RUNS / f"{case}-a.jsonl"), str(RUNS / f"{case}-b.jsonl"), level=level,
                      context_notes=False, shapes=False)
    assert not r.equal


@pytest.mark.parametrize("level", ["events", "wire"])
def test_hello_against_tool_run_shows_the_tool_call(level):
    r = diff_captures(str(RUNS / "cb115-hello-a.jsonl"), str(RUNS / "cb115-tool-b.jsonl"), level=level,
                      context_notes=False)
    assert not r.equal
    changes = [c for p in r.pairs for c in p.changes]
    assert len(changes) <= (12 if level == "events" else 20)  # concise: the prompt, the reply, the tool round trip
    if level == "events":
        assert any(c.op == "added" and c.kind == "tool_call" for c in changes)
        fields = {f[0]: f for c in changes for f in c.fields}
        assert fields["turn[0].prompt"][1:] == ("say hello", "run echo hi")


def test_environment_block_lines_are_masked_at_line_start_only():
    block = ("You have been invoked in the following environment: \n - Primary working directory: /tmp/a/w\n"
             " - Is a git repository: false\n - Platform: linux\n - Shell: unknown\n - OS Version: Linux 6.18.44-fc")
    masked = mask_text(block)
    assert " - Platform: <env>\n - Shell: <env>\n - OS Version: <env>" in masked
    assert " - Is a git repository: <env>" in masked
    assert orjson.loads(mask_json(orjson.dumps(block))) == masked
    assert mask_text("the Platform: linux-2 build") == "the Platform: linux-2 build"


# --- stderr: a multiset of lines ---------------------------------------------------------------------------
def _proc_capture(path: Path, out: list[str], err: list[str]) -> str:
    from wirecap.capture.writer import CaptureWriter, default_origin

    w = CaptureWriter(str(path), origin=default_origin("test"), force=True)
    w.open("proc", "process", t=0.0, argv=["tool"], cwd="/work", env={}, pid=1)
    w.open("stdout", "pipe", t=0.0, proc="proc", stream="stdout")
    w.open("stderr", "pipe", t=0.0, proc="proc", stream="stderr")
    t = 0.0
    for i in range(max(len(out), len(err))):
        for ch, lines in (("stdout", out), ("stderr", err)):
            if i < len(lines):
                t += 0.01
                w.msg(ch, "s2c", lines[i].encode() + b"\n", t=t)
    w.close_channel("stdout", t=t + 0.01)
    w.close_channel("stderr", t=t + 0.01)
    w.close_channel("proc", t=t + 0.02, exit_code=0)
    w.close()
    return str(path)


@pytest.mark.parametrize("level", ["events", "wire"])
def test_stderr_order_is_not_a_difference_but_its_lines_are(tmp_path, level):
    out = ['{"type":"start"}', '{"type":"done"}']
    err = ["[fetch] POST /batch -> 127.0.0.1:4001", "[fetch] GET /me -> 127.0.0.1:4001", "warning: slow"]
    a = _proc_capture(tmp_path / "a.jsonl", out, err)
    b = _proc_capture(tmp_path / "b.jsonl", out, [err[1], err[2], err[0].replace("4001", "5123")])
    assert diff_captures(a, b, level=level, context_notes=False).equal
    c = _proc_capture(tmp_path / "c.jsonl", out, [err[1], err[2], err[0], err[0]])
    r = diff_captures(a, c, level=level, context_notes=False)
    assert not r.equal
    assert sum(len(p.changes) for p in r.pairs) == 1


tricky = st.lists(st.sampled_from(['"', "\\", "\n", "\t", " ", "a", "Z", "0", "7", "-", "_", ":", "/", "é", "Platform: ",
                                   "\n - OS Version: ", "Chunk ID: ", "duration_ms: ", "127.0.0.1:", "msg_", "2026-11-25", "T06:01:03Z",
                                   str(uuid.UUID(int=7)), "04673da466324136b527"]), max_size=12).map("".join)
json_values = st.recursive(st.none() | st.integers(0, 2 * 10**12) | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False,
                           allow_infinity=False) | st.sampled_from([1.0000000000000002e+16, 1e-7, 1764050463.572]) | tricky,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from(["id", "promptId", "createdAt", "text", "x"]) | tricky, inner, max_size=3),
                           max_leaves=8)


@settings(max_examples=500, deadline=None)
@given(json_values)
def test_masking_json_always_gives_json_and_agrees_with_text_masking(value):
    masked = orjson.loads(mask_json(orjson.dumps(value)))  # never breaks the JSON (numbers included)
    assert mask_value(value) is not None or value is None
    if isinstance(value, str) and "\\" not in value and not any(c in value for c in "\n\t"):
        assert masked == mask_text(value)


def test_env_learns_no_url_host_as_home():
    env = EnvMask()
    env.learn("see https://example.com/.config/x and /home/al/.claude/settings.json")
    assert env.paths == {"/home/al": "<home>"}


@pytest.mark.parametrize("level", ["events", "wire"])
def test_analytics_requests_are_left_out_of_diff(level):
    """PostHog batches follow the client's flush timer; with shapes off they are compared like the rest."""
    a, b = str(RUNS / "sdk10-hello-a.jsonl"), str(RUNS / "sdk10-hello-b.jsonl")
    on = diff_captures(a, b, level=level, context_notes=False)
    off = diff_captures(a, b, level=level, context_notes=False, shapes=False)
    assert on.equal
    assert len(off.pairs) > len(on.pairs)  # the /batch/ channels
