"""What every dialect decoder shares: the `Dialect` descriptor, the `Decoder` base and `Finding`.

A decoder is sans-I/O: the driver in `wirecap.dialects` feeds it the records of one unit (a channel,
or a process with its pipes) and it returns universal events. It also keeps the protocol state that
validation needs, so one pass both decodes and checks: rule violations go to `decoder.findings`.
Nothing here raises on bad input; what a decoder does not understand becomes an `unparsed` event.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wirecap.events import (
    ERROR,
    ITEM_COMPLETED,
    SESSION_ENDED,
    STATUS,
    UNPARSED,
    Event,
)

ERROR_SEV = "error"
WARNING = "warning"
INFO = "info"

# Validation options and their defaults (seconds). Documented in docs/validation-rules.md.
DEFAULT_OPTIONS: dict[str, float] = {
    "heartbeat_interval": 30.0,
    "heartbeat_timeout": 60.0,
    "ack_latency": 5.0,
    "tool_call_timeout": 30.0,
    "gap": 30.0,
}


@dataclass(slots=True)
class Finding:
    """One validation result: a rule broken (or worth noting) at a record."""

    severity: str  # "error" | "warning" | "info"
    rule: str
    message: str
    seq: int | None
    ch: str | None

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "rule": self.rule, "message": self.message, "seq": self.seq, "ch": self.ch}


Sniff = Callable[[dict[str, Any] | None, list[dict[str, Any]]], str | None]
MismatchMessages = Callable[[Any, str], list[str]]  # `Dialect.mismatch_messages`


@dataclass(frozen=True, slots=True)
class Dialect:
    """A registry entry: the decoder class, where it runs, how it is recognized, what changes run to run.

    `sniff(open_record, first_msgs)` is the dialect's own detector: given the unit's open record (for a
    process: the process's; None when the capture has none) and its first message records (up to
    `DETECT_MSGS`, stderr left out, in order) it returns a short reason when the unit speaks this
    dialect, else None. It decides from all the messages it is given (one unknown type is not a
    reason to say no) and never raises. The driver asks the sniffs of the unit's transport in
    ascending `priority`: more specific dialects (CodeBuddy before the Claude Code it extends,
    session files before streams) come first.

    `mismatch_messages(live, text)` (replay) answers a live client message that matched nothing with
    the messages its client shows as an error and stops on (never a form it retries).

    `volatile` are the paths (normalize syntax) of the fields that change run to run: the one list
    replay matching and `diff --level wire` hide (`wirecap.dialects.volatile_paths`). `session_file`
    marks a file the agent writes itself (a session log, a rollout), which `wirecap import` recognizes
    by one of its lines (`wirecap.dialects.session_file_dialect`).
    """

    name: str
    transport: str  # "pipe" (process stdout/stdin), "ws" or "http"
    decoder: Callable[..., Decoder]
    summary: str
    volatile: tuple[str, ...] = ()
    rules: tuple[tuple[str, str, str], ...] = field(default=())  # (rule, severity, one-line meaning)
    sniff: Sniff | None = None
    priority: int = 100
    known: Any = None  # a wirecap.dialects.drift.Known: the message types and fields it knows (rule `drift`)
    session_file: bool = False  # a log the agent writes itself (imported with `wirecap import`), not a live stream
    llm_calls: bool = False  # its turns are LLM calls to a model API (the transport truth of `info` / `report`)
    per_call: bool = False  # one unit carries several LLM calls (a WebSocket): `stats` lists them one by one
    # replay: (live client message, text) -> the messages that tell the client `text` as an error it ends
    # its turn on, in the protocol's own non-retryable form (`replay serve` sends them on a mismatch,
    # then closes 1008); none by default (the close reason carries the text)
    mismatch_messages: MismatchMessages = field(default=lambda live, text: [])
    # a client request's JSON body -> what it told the model (`wirecap.dialects.request_view.RequestView`:
    # system prompt, tool definitions, messages), None for a message that is not a request; the report's
    # thread reads requests through it
    request_view: Callable[[Any], Any] | None = None


# --- what sniffs read ----------------------------------------------------------------------------------
DETECT_MSGS = 8  # first messages of a unit that detection looks at (decode, info, report, replay alike)

_EXTS = (".js", ".cjs", ".mjs", ".exe", ".cmd", ".sh", ".py")
ARGV_WORDS = 40  # how many argv words program_names reads (wrappers, their options and NAME=VALUE words included)
_CMD_STRINGS = 2  # how many command strings (`sh -c "..."`, `env -S "..."`) it follows, one inside the other


@dataclass(frozen=True, slots=True)
class _Launcher:
    """How a program that runs another one is called: what to skip to reach the program it runs.

    `values`: options whose value is the next word (`-n 5`; `--opt=value` is one word anyway);
    `positionals`: words before the command (timeout's duration); `assignments`: NAME=VALUE words
    (env, sudo); `subs`: sub-command words before it (`bun run`, `uv tool run`, at most two);
    `package`: the command is a package spec (`@scope/name@1.2.3`); `evals`: options after which
    code, not a program, follows (`node -e`: no program name); `module`: the option naming a module
    to run (`python -m`); `cmd_letter` / `cmd_longs`: options whose value is a command line
    (`sh -c`, `script -qefc`, `env -S`)."""

    values: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    subs: frozenset[str] = frozenset()
    package: bool = False
    evals: frozenset[str] = frozenset()
    module: str | None = None
    cmd_letter: str | None = None
    cmd_longs: frozenset[str] = frozenset()


def _fs(*words: str) -> frozenset[str]:
    return frozenset(words)


_SHELL = _Launcher(values=_fs("-o", "+o", "-O", "+O", "--rcfile", "--init-file"), cmd_letter="c")
_NODE = _Launcher(values=_fs("-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions",
                             "--title", "--input-type", "--env-file", "--inspect-port"),
                  evals=_fs("-e", "--eval", "-p", "--print"))
_PYTHON = _Launcher(values=_fs("-X", "-W", "-Q"), evals=_fs("-c"), module="-m")
_NPX = _Launcher(values=_fs("-p", "--package", "--cache", "--userconfig", "-w", "--workspace", "--registry"),
                 package=True, cmd_longs=_fs("-c", "--call"))
_UV = _Launcher(values=_fs("--from", "--with", "-w", "-p", "--python", "--index", "--index-url", "--directory",
                           "--project", "--env-file", "--extra"), subs=_fs("run", "tool"))
# Programs that run another program, by the base name of the word that runs them (digits and dots at
# its end ignored: python3.12 is python). `time` is the binary (/usr/bin/time), not the shell keyword.
_LAUNCHERS: dict[str, _Launcher] = {
    "env": _Launcher(values=_fs("-u", "--unset", "-C", "--chdir"), assignments=True,
                     cmd_longs=_fs("-S", "--split-string")),
    "timeout": _Launcher(values=_fs("-k", "--kill-after", "-s", "--signal"), positionals=1),
    "nice": _Launcher(values=_fs("-n", "--adjustment")),
    "stdbuf": _Launcher(values=_fs("-i", "-o", "-e", "--input", "--output", "--error")),
    "nohup": _Launcher(),
    "exec": _Launcher(values=_fs("-a")),  # (in a command line: `sh -c "exec claude ..."`)
    "command": _Launcher(evals=_fs("-v", "-V")),
    "setsid": _Launcher(),
    "time": _Launcher(values=_fs("-o", "--output", "-f", "--format")),
    "sudo": _Launcher(values=_fs("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h",
                                 "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user",
                                 "-T", "--command-timeout"), assignments=True),
    "runuser": _Launcher(values=_fs("-u", "--user", "-g", "--group", "-G", "--supp-group", "-w",
                                    "--whitelist-environment")),
    "strace": _Launcher(values=_fs("-o", "--output", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-P",
                                   "-X", "-U")),
    "unshare": _Launcher(values=_fs("-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd")),
    "script": _Launcher(values=_fs("-T", "--log-timing", "-I", "--log-in", "-O", "--log-out", "-B", "--log-io",
                                   "-E", "--echo", "-m", "--logging-format"), cmd_letter="c", cmd_longs=_fs("--command")),
    **dict.fromkeys(("sh", "bash", "dash", "zsh"), _SHELL),
    **dict.fromkeys(("node", "nodejs"), _NODE),
    "bun": _Launcher(values=_fs("-r", "--preload", "--cwd", "--config"), subs=_fs("run", "x", "exec"),
                     evals=_fs("-e", "--eval", "-p", "--print")),
    "deno": _Launcher(values=_fs("--config", "--import-map", "--lock", "-L", "--log-level", "--location", "--cert",
                                 "--env-file"), subs=_fs("run", "x")),
    "python": _PYTHON,
    "npx": _NPX,
    "pnpx": _NPX,
    "bunx": _Launcher(values=_fs("-p", "--package"), package=True),
    "pnpm": _Launcher(values=_fs("-C", "--dir", "--filter", "-F"), subs=_fs("dlx", "exec", "run"), package=True),
    "yarn": _Launcher(values=_fs("--cwd"), subs=_fs("dlx", "exec", "run"), package=True),
    "npm": _Launcher(values=_fs("-p", "--package", "-w", "--workspace", "--prefix"), subs=_fs("exec", "x"),
                     package=True, cmd_longs=_fs("-c", "--call")),
    "uv": _UV,
    "uvx": replace(_UV, subs=frozenset()),
}


def _names_of(word: str, package: bool = False) -> tuple[str, ...]:
    parts = [p for p in word.replace("\\", "/").split("/") if p]
    if not parts:
        return ()
    base = parts[-1]
    if package and "@" in base[1:]:  # a package spec: name@version (the scope, @scope, is a folder part)
        base = base[: base.index("@", 1)]
    for ext in _EXTS:
        if base.endswith(ext) and len(base) > len(ext):  # (a word that is only `.js` keeps its name)
            base = base[: -len(ext)]
    return (base, *reversed(parts[:-1]))


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _command_words(line: str) -> list[str] | None:
    import shlex

    try:
        return shlex.split(line[:4096])[:ARGV_WORDS]
    except ValueError:  # an unterminated quote (or a line cut at 4 KB): no program to tell
        return None


_NO_PROGRAM: tuple[int, None, None] = (-1, None, None)
_After = tuple[int, list[str] | None, str | None]


def _next_word(words: list[Any], k: int) -> Any:
    return words[k + 1] if k + 1 < len(words) else None


def _option(spec: _Launcher, words: list[Any], k: int) -> int | _After:
    """The option words[k] of a launcher: how many words it takes (itself and its value), or, when
    what follows is not a program name, `_after`'s answer (code to evaluate, a command line to read,
    a module to run)."""
    w = words[k]
    opt, eq, val = w.partition("=")
    if opt in spec.evals:
        return _NO_PROGRAM
    if opt in spec.cmd_longs or (spec.cmd_letter and w[0] == "-" and w[1] != "-" and spec.cmd_letter in w[1:]):
        if not eq:
            val = _next_word(words, k)
        return (-1, _command_words(val), None) if isinstance(val, str) else _NO_PROGRAM
    if spec.module is not None and opt == spec.module:
        val = val if eq else _next_word(words, k)
        return -1, None, val if isinstance(val, str) else None
    return 2 if (not eq and opt in spec.values) else 1


def _after(spec: _Launcher, words: list[Any], k: int) -> _After:
    """Skip what a launcher takes before the program it runs, from words[k]: (index of the program
    word, a command line's words to read instead, or the module a `-m` option names). (-1, None, None)
    when no program follows (code to evaluate, a word that is not a string, the end of the words)."""
    positionals, subs = spec.positionals, 0
    while k < len(words):
        w = words[k]
        if not isinstance(w, str):
            return _NO_PROGRAM
        if w == "--":
            return k + 1, None, None
        if len(w) > 1 and (w[0] == "-" or (w[0] == "+" and spec is _SHELL)):
            step = _option(spec, words, k)
            if isinstance(step, tuple):
                return step
            k += step
        elif spec.assignments and _is_assignment(w):
            k += 1
        elif positionals:
            positionals -= 1
            k += 1
        elif subs < 2 and w in spec.subs:
            subs += 1
            k += 1
        else:
            return k, None, None
    return _NO_PROGRAM


def program_names(open_record: Any) -> tuple[str, ...]:
    """The names the program of a process open record goes by, most specific first: the base name of
    argv[0] and its folders (`.../node_modules/@anthropic-ai/claude-code/cli.js` gives `cli`,
    `claude-code`, ...). Through what runs another program: interpreters (`node`, `python3 -m`,
    `bun run`, `deno run`), package runners (`npx`, `bunx`, `pnpm dlx`, `npm exec`, `uvx`: the package
    without its version), wrappers (`env` with its options and NAME=VALUE words, `timeout` and its
    duration, `nice -n N`, `stdbuf -oL`, `nohup`, `setsid`, `time`, `sudo`, `runuser`, `strace`,
    `unshare`, and `exec` / `command` in a command line) and command lines (`sh -c "..."`, `script -c "..."`, `env -S "..."`), each with the
    options that take a value. Reads at most `ARGV_WORDS` words (and two nested command lines), so
    its cost does not grow with argv. Empty when there is no argv, a word on the way is not a string,
    or no program follows (`node -e CODE`)."""
    if not isinstance(open_record, dict):
        return ()
    argv = open_record.get("argv")
    if not isinstance(argv, list):
        return ()
    words: list[Any] = argv[:ARGV_WORDS]
    k, package, lines = 0, False, 0
    while 0 <= k < len(words):
        word = words[k]
        if not isinstance(word, str):
            return ()
        names = _names_of(word, package)
        if not names:
            k += 1
            continue
        spec = _LAUNCHERS.get(names[0].rstrip("0123456789."))
        if spec is None:
            return names
        k, line, module = _after(spec, words, k + 1)
        if module is not None:
            return _names_of(module.replace(".", "/")) if module else ()
        if line is not None:
            lines += 1
            if lines > _CMD_STRINGS:
                return ()
            words, k, package = line, 0, False
            continue
        package = spec.package
    return ()


def argv_option(open_record: Any, option: str) -> str | None:
    """The value of `--option VALUE` or `--option=VALUE` in a process open record's argv, else None."""
    argv = open_record.get("argv") if isinstance(open_record, dict) else None
    if not isinstance(argv, list):
        return None
    for i, word in enumerate(argv):
        if not isinstance(word, str):
            continue
        if word == option and i + 1 < len(argv) and isinstance(argv[i + 1], str):
            return argv[i + 1]
        if word.startswith(option + "="):
            return word[len(option) + 1:]
    return None


# Analytics endpoints (PostHog-style `/batch`, `/capture`, ...): requests a client sends on its own
# flush timer, not part of any conversation; replay matching and diff treat them apart.
TELEMETRY_PATHS = frozenset(("/batch", "/capture", "/i/v0/e", "/decide", "/flags"))


def is_telemetry(path: str) -> bool:
    """Whether an HTTP path (without its query) is an analytics endpoint."""
    return path.rstrip("/") in TELEMETRY_PATHS


def url_path(open_record: Any) -> str:
    """The path of an http/ws open record's URL without a trailing slash ("" when there is none)."""
    url = open_record.get("url") if isinstance(open_record, dict) else None
    if not isinstance(url, str):
        return ""
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).path.rstrip("/")
    except ValueError:
        return ""


def is_stderr(ch: Any) -> bool:
    """Whether a channel is a stderr pipe (its lines are free text, not the dialect's messages)."""
    return isinstance(ch, str) and ch[:6] == "stderr"


def out_msgs(msgs: Any) -> list[dict[str, Any]]:
    """The msg records of a sample that are not stderr lines (what sniffs judge)."""
    if not isinstance(msgs, list):
        return []
    out = []
    for r in msgs:
        if isinstance(r, dict) and r.get("type", "msg") == "msg":
            if is_stderr(r.get("ch")):
                continue
            out.append(r)
    return out


def json_objects(msgs: Any) -> list[dict[str, Any]]:
    """The JSON-object payloads of a sample's non-stderr messages, in order."""
    return [r["json"] for r in out_msgs(msgs) if isinstance(r.get("json"), dict)]


def by_argv(open_record: Any, msgs: Any, names: frozenset[str] | tuple[str, ...], what: str) -> str | None:
    """The argv half of a pipe dialect's sniff: the process runs one of `names` and its stdout does not
    contradict (it printed nothing yet, or at least one JSON object: text output, e.g. `-p` without
    `--output-format stream-json` or a terminal UI, is not the JSON-lines dialect)."""
    prog = program_names(open_record)
    hit = next((n for n in prog if n in names), None)
    if hit is None:
        return None
    sample = out_msgs(msgs)
    if sample and not any(isinstance(r.get("json"), (dict, list)) for r in sample):
        return None
    fmt = argv_option(open_record, "--output-format") or argv_option(open_record, "--format")
    if fmt == "text":
        return None
    return f"argv runs {hit} ({what})" + ("" if sample else "; no output yet")


def raw_payload(rec: dict[str, Any]) -> Any:
    """The payload of a msg record as it is kept in an `unparsed` event."""
    if "json" in rec:
        return rec["json"]
    if "text" in rec:
        return rec["text"]
    if "b64" in rec:
        return {"b64": rec["b64"]}
    return None


def payload_json(rec: dict[str, Any]) -> Any:
    """The JSON value of a msg (None when the payload is not JSON)."""
    return rec.get("json")


def text_of(rec: dict[str, Any]) -> str | None:
    """The payload as text when it is text (or JSON spelled as text), else None."""
    if "text" in rec:
        return rec["text"]
    if "b64" in rec:
        try:
            return base64.b64decode(rec["b64"], validate=False).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return None


class Decoder:
    """Base decoder for one unit. Subclasses implement `on_msg` (and optionally the other hooks).

    `feed(record)` accepts any record type; `finish()` runs end-of-stream checks. Both return lists
    of events and never raise on bad input (a bug in a hook becomes an `unparsed` event too).
    """

    dialect = ""
    json_lines = True  # payloads are expected to be JSON (a non-JSON message breaks `invalid-json`)

    def __init__(self, unit: str, options: dict[str, Any] | None = None) -> None:
        self.unit = unit
        opts = dict(DEFAULT_OPTIONS)
        if options:
            opts.update({k: v for k, v in options.items() if v is not None})
        self.options = opts
        self.findings: list[Finding] = []
        self.exit_code: int | None = None
        self.signal: str | None = None
        self._last: dict[str, Any] | None = None  # the latest record fed (times and seqs read from it)
        self.closed_session = False

    @property
    def last_t(self) -> float:
        t = self._last.get("t") if self._last is not None else None
        return t if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0

    @property
    def last_seq(self) -> int | None:
        return self._last.get("seq") if self._last is not None else None

    # --- helpers ---------------------------------------------------------------------------------
    def ev(self, kind: str, rec: dict[str, Any], item: str | None = None, id: str | None = None,
           role: str | None = None, data: dict[str, Any] | None = None) -> Event:
        if id is not None and id.__class__ is not str:  # ids and roles come from untrusted JSON: keep
            id = hkey(id)  # them hashable (consumers key dicts by them)
        if role is not None and role.__class__ is not str:
            role = hkey(role)
        return Event(kind, rec.get("ch") or self.unit, (rec.get("seq", 0),), rec.get("t", 0.0), self.dialect,
                     item, id, role, data if data is not None else {})

    def unparsed(self, rec: dict[str, Any], reason: str) -> Event:
        return Event(UNPARSED, rec.get("ch") or self.unit, (rec.get("seq", 0),), rec.get("t", 0.0), self.dialect,
                     None, None, None, {"reason": reason, "raw": raw_payload(rec)})

    def find(self, severity: str, rule: str, message: str, rec: dict[str, Any] | None = None,
             seq: int | None = None, ch: str | None = None) -> None:
        if rec is not None:
            seq = rec.get("seq") if seq is None else seq
            ch = rec.get("ch") if ch is None else ch
        self.findings.append(Finding(severity, rule, message, seq, ch if ch is not None else self.unit))

    def msg_type(self, rec: dict[str, Any]) -> str:
        """The wire message type used by stats (`messages_by_type`)."""
        value = rec.get("json")
        if isinstance(value, dict):
            t = value.get("type")
            if isinstance(t, str):
                return t
            return "object"
        if "json" in rec:
            return type(value).__name__
        return "text" if "text" in rec else "binary"

    # --- driver entry points ------------------------------------------------------------------------
    def feed(self, rec: dict[str, Any]) -> list[Event]:
        self._last = rec
        rtype = rec.get("type")
        try:
            if rtype == "msg":
                return self.on_msg(rec)
            if rtype == "open":
                return self.on_open(rec)
            if rtype == "close":
                return self.on_close(rec)
            if rtype == "response":
                return self.on_response(rec)
            if rtype == "error":
                return self.on_error_record(rec)
            return [self.unparsed(rec, f"unexpected record type {rtype!r}")]
        except Exception as e:  # noqa: BLE001 - a decoder bug must not lose the record or the run
            return self._failed(rec, e)

    def feed_msg(self, rec: dict[str, Any]) -> list[Event]:
        """`feed` for a record known to be a msg: the driver's hot path skips the type dispatch."""
        self._last = rec
        try:
            return self.on_msg(rec)
        except Exception as e:  # noqa: BLE001 - as in feed
            return self._failed(rec, e)

    def _failed(self, rec: dict[str, Any], e: Exception) -> list[Event]:
        self.find(WARNING, "decoder-error", f"{self.dialect} decoder failed on this record: {type(e).__name__}: {e}", rec)
        return [self.unparsed(rec, f"decoder error: {type(e).__name__}: {e}")]

    def finish(self) -> list[Event]:
        try:
            return self.on_finish()
        except Exception as e:  # noqa: BLE001
            self.find(WARNING, "decoder-error", f"{self.dialect} decoder failed at end of stream: {type(e).__name__}: {e}",
                      seq=self.last_seq)
            return []

    # --- hooks ---------------------------------------------------------------------------------------
    def on_open(self, rec: dict[str, Any]) -> list[Event]:
        return []

    def on_msg(self, rec: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "not decoded")]

    def on_response(self, rec: dict[str, Any]) -> list[Event]:
        return [self.unparsed(rec, "unexpected HTTP response record")]

    def on_close(self, rec: dict[str, Any]) -> list[Event]:
        if rec.get("kind") == "process" or "exit_code" in rec or "signal" in rec:
            if isinstance(rec.get("exit_code"), int):
                self.exit_code = rec["exit_code"]
            if rec.get("signal"):
                self.signal = str(rec["signal"])
            return self.end_session(rec)
        return []

    def on_error_record(self, rec: dict[str, Any]) -> list[Event]:
        msg = str(rec.get("message", ""))
        self.find(WARNING, "recorder-error", f"the recorder reported: {msg}", rec)
        return [self.ev(ERROR, rec, data={"message": msg, "code": "recorder", "fatal": False})]

    def on_finish(self) -> list[Event]:
        return []

    def end_session(self, rec: dict[str, Any], **data: Any) -> list[Event]:
        """session.ended once per unit (at the process close, or at end of stream)."""
        if self.closed_session:
            return []
        self.closed_session = True
        if self.exit_code is not None:
            data.setdefault("exit_code", self.exit_code)
        if self.signal is not None:
            data.setdefault("signal", self.signal)
        if "duration" in rec and "duration_ms" not in data and isinstance(rec["duration"], (int, float)):
            data["duration_ms"] = round(rec["duration"] * 1000, 3)
        return [self.ev(SESSION_ENDED, rec, data=data)]

    def status(self, rec: dict[str, Any], text: str, **data: Any) -> Event:
        data["text"] = text
        return self.ev(ITEM_COMPLETED, rec, item=STATUS, data=data)


def as_dict(v: Any) -> dict[str, Any]:
    """An object from untrusted JSON, else an empty one (so `.get` reads None)."""
    return v if isinstance(v, dict) else {}


def str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def num(v: Any) -> int | float:
    """A token count or cost from untrusted JSON: numbers pass, anything else is 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    return v


def hkey(v: Any) -> Any:
    """A dict key from an untrusted JSON value (lists and objects are not hashable)."""
    return v if v is None or isinstance(v, (str, int, float)) else repr(v)
