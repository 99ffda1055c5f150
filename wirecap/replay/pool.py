"""Which recording a new live connection or request gets. Sans-I/O.

Each recorded channel is used once, in recorded order, unless `loop` is set (then a used one may be
played again once no fresh one matches). WebSocket connections are routed by path; HTTP requests by
method, path and normalized body.
"""

from __future__ import annotations

import threading
from typing import Any

from wirecap.capture.payload import encode_payload
from wirecap.dialects.base import is_telemetry
from wirecap.replay.match import Matcher, Mismatch, channel_dialect, comparable, match_profile
from wirecap.replay.script import ChannelScript, request_payload

_UNSET: Any = object()
BODY_CACHE = 256  # decoded recorded bodies kept for matching (the oldest goes first)


class ScriptPool:
    def __init__(self, scripts: list[ChannelScript], *, ignore: list[str] | tuple[str, ...] = (),
                 loop: bool = False) -> None:
        self.scripts = scripts
        self.loop = loop
        self.ignore = list(ignore)
        self.used: set[str] = set()
        self._lock = threading.Lock()
        self._matchers: dict[str | None, Matcher] = {}
        self._dialects = {s.ch: channel_dialect(s) for s in scripts}
        self._profiles = {s.ch: match_profile(s, self._dialects[s.ch]) for s in scripts}
        self._bodies: dict[int, tuple[ChannelScript, Any]] = {}  # id(script) -> (script, its `_body`)
        self.http_count = 0
        Matcher(self.ignore)  # a bad --ignore path fails here, before serving, not on the first request

    def matcher(self, script: ChannelScript) -> Matcher:
        d = self._profiles.get(script.ch)
        m = self._matchers.get(d)
        if m is None:
            m = self._matchers[d] = Matcher(self.ignore, d)
        return m

    def _body(self, s: ChannelScript) -> Any:
        """`_body_of(s)`, decoded once per script (base64, content-encoding) and kept: every live request
        of its route compares with it again."""
        hit = self._bodies.get(id(s))
        if hit is not None and hit[0] is s:  # (the script kept with its body: an id is never reused for another)
            return hit[1]
        body = _body_of(s)
        if len(self._bodies) >= BODY_CACHE:  # bounded: a capture of 10^4 exchanges is read back, not held
            del self._bodies[next(iter(self._bodies))]
        self._bodies[id(s)] = (s, body)
        return body

    def dialect_of(self, ch: str) -> str | None:
        """The dialect of the recorded channel `ch` (None when unknown or not a recorded channel)."""
        return self._dialects.get(ch)

    def ws_dialect(self, path: str) -> str | None:
        """The dialect of the recorded WebSocket channels at `path` (the first one's; None if none)."""
        return next((self._dialects.get(s.ch) for s in self.scripts if s.kind == "ws" and s.path == path), None)

    def ws_deflate(self, path: str) -> bool:
        """Whether a live upgrade at `path` may agree permessage-deflate: as the recorded server of the
        channel it will get did (the next unused one at `path`: its open record's `extensions`, else the
        101's `sec-websocket-extensions`); yes when the recording does not say (an import) or none is left."""
        with self._lock:
            at = [s for s in self.scripts if s.kind == "ws" and s.path == path]
            script = next((s for s in at if s.ch not in self.used), at[0] if self.loop and at else None)
        if script is None:
            return True
        agreed = script.open.get("extensions")
        if agreed is None:
            headers = script.open.get("response_headers")
            if not isinstance(headers, dict):
                return True
            agreed = next((v for k, v in headers.items() if k.lower() == "sec-websocket-extensions"), "")
        return "permessage-deflate" in str(agreed).lower()

    def ws_paths(self) -> set[str]:
        return {s.path for s in self.scripts if s.kind == "ws"}

    def subprotocols(self) -> list[str]:
        return [s.open["subprotocol"] for s in self.scripts if s.kind == "ws" and s.open.get("subprotocol")]

    @property
    def remaining(self) -> list[ChannelScript]:
        return [s for s in self.scripts if s.ch not in self.used]

    def upgrade_refused(self, path: str) -> bool:
        """Whether a live WebSocket upgrade to `path` is to get a recorded refusal: the first unused
        recording at `path` that began with an upgrade request is an HTTP exchange (the server answered
        it with a status, say 426, not 101: the client then fell back to HTTP), not a WebSocket channel.
        The request is then served as HTTP (`take_http`). With `loop`, used recordings count once every
        one was used."""
        with self._lock:
            tried = [s for s in self.scripts if s.path == path and (s.kind == "ws" or _upgrade(s))]
            fresh = [s for s in tried if s.ch not in self.used] or (tried if self.loop else [])
        return bool(fresh) and fresh[0].kind == "http"

    def take_ws(self, path: str) -> ChannelScript | None:
        """The next recorded WebSocket channel at `path` (None when none is left)."""
        with self._lock:
            for pass_ in (0, 1):
                for s in self.scripts:
                    if s.kind == "ws" and s.path == path and (pass_ == 1 or s.ch not in self.used):
                        self.used.add(s.ch)
                        return s
                if not self.loop:
                    break
        return None

    def take_http(self, method: str, path: str, body: bytes, strict: bool = True, *, live: Any = _UNSET
                  ) -> tuple[ChannelScript | None, Mismatch | None]:
        """The recording for one live request: the first unused one with the same method, path and
        normalized body. Otherwise (None, mismatch) in strict mode, or in lenient mode the next
        unused one with the same method and path (and the mismatch, to log). `live`: the body's
        `comparable(encode_payload(body))` when the caller has it already (else decoded here)."""
        if live is _UNSET:
            live = comparable(encode_payload(body)) if body else None
        with self._lock:
            self.http_count += 1
            route = [s for s in self.scripts if s.kind == "http" and s.method == method and s.path == path]
            loop = self.loop or is_telemetry(path)  # (analytics batches come in any number: see match.py)
            found = self._first_match(route, live, loop)
            if found is not None:
                self.used.add(found.ch)
                return found, None
            return self._unmatched(method, path, live, route, loop, strict)

    def _first_match(self, route: list[ChannelScript], live: Any, loop: bool) -> ChannelScript | None:
        """The first unused recording of the route whose body matches (with `loop`, then a used one)."""
        for pass_ in (0, 1):
            for s in route:
                if (pass_ == 1 or s.ch not in self.used) and self.matcher(s).same(live, self._body(s)):
                    return s
            if not loop:
                break
        return None

    def _unmatched(self, method: str, path: str, live: Any, route: list[ChannelScript], loop: bool,
                   strict: bool) -> tuple[ChannelScript | None, Mismatch]:
        """No recording matched: the mismatch against the closest candidate (the route's unused ones,
        else any unused exchange), and in lenient mode the next unused recording of the route."""
        fresh = [s for s in route if s.ch not in self.used] or (route if loop else [])
        pool = fresh or [s for s in self.scripts if s.kind == "http" and s.ch not in self.used]
        label = f"request {method} {path}"
        if not pool:
            return None, Mismatch("http", self.http_count, live, None, None, what=label)
        mm = self._closest(pool, method, path, live, label)
        if strict or not fresh:
            return None, mm
        self.used.add(fresh[0].ch)
        return fresh[0], mm

    def _closest(self, pool: list[ChannelScript], method: str, path: str, live: Any, label: str) -> Mismatch:
        m = self.matcher(pool[0])
        by_id = {id(s): s for s in pool}
        cands = ((id(s), self._body(s)) for s in pool)  # one at a time (closest keeps the best)
        key, value, diffs = m.closest(live, cands)
        best = by_id[key]  # type: ignore[index]
        if best.method != method or best.path != path:
            diffs = [("(request line)", f"{best.method} {best.path}", f"{method} {path}"), *diffs]
        return Mismatch(best.ch, self.http_count, live, _seq_of(best), value, diffs, what=label)


def _upgrade(s: ChannelScript) -> bool:
    """An HTTP exchange whose request asked for a WebSocket (a refused upgrade, as recorded)."""
    headers = s.open.get("headers") or {}
    up = next((v for k, v in headers.items() if k.lower() == "upgrade"), None)
    return s.kind == "http" and s.method == "GET" and isinstance(up, str) and up.lower() == "websocket"


def _body_of(s: ChannelScript) -> Any:
    body = request_payload(s)
    if not body:
        return None
    if len(body) == 1:
        return comparable(body[0])
    return [comparable(b) for b in body]


def _seq_of(s: ChannelScript) -> int | None:
    body = s.request_body
    return body[0].get("seq") if body else s.open.get("seq")
