"""pytest plugin: `wirecap_server("captures/x.jsonl")` serves a capture for one test.

Registered through the `pytest11` entry point, so it is active wherever wirecap is installed:

    def test_agent_says_hello(wirecap_server):
        url = wirecap_server("captures/hello.jsonl", speed=0)   # http://127.0.0.1:PORT
        run_my_agent(backend=url.replace("http", "ws") + "/ws")

The server runs on 127.0.0.1 in a thread with its own event loop and stops at teardown. A client
message that matches no recording fails the test with the same report `replay serve` prints (the
closest recorded candidate and the aligned differences: an inserted list element is one `+` line);
so does a strict-mode HTTP 400 / WebSocket 1008 the client may have swallowed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_SERVERS = pytest.StashKey[list]()


@pytest.fixture
def wirecap_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """Factory: `wirecap_server(capture, *, speed=0, max_wait=None, mode="strict", loop=False,
    ignore=())` starts a replay server and returns its base URL (`http://127.0.0.1:PORT`)."""
    from wirecap.replay.http_server import ReplayServer, ThreadedReplayServer

    started: list[ThreadedReplayServer] = []
    request.node.stash[_SERVERS] = started

    def start(capture: str | os.PathLike[str], *, speed: float = 0.0, max_wait: float | None = None,
              mode: str = "strict", loop: bool = False, ignore: tuple[str, ...] | list[str] = ()) -> str:
        path = os.fspath(capture)
        if not os.path.isabs(path) and not os.path.exists(path):
            candidate = os.path.join(str(request.config.rootpath), path)
            if os.path.exists(candidate):
                path = candidate
        server = ReplayServer.from_capture(path, speed=speed, max_wait=max_wait, strict=mode == "strict",
                                           loop=loop, ignore=list(ignore))
        runner = ThreadedReplayServer(server)
        runner.start()
        started.append(runner)
        return server.url

    yield start
    for runner in started:
        runner.stop()


def _mismatch_report(item: pytest.Item) -> str | None:
    runners: list[Any] = item.stash.get(_SERVERS, [])
    lines = [mm.report() for r in runners for mm in r.server.mismatches]
    if not lines:
        return None
    return f"wirecap replay: {len(lines)} unmatched client message(s)\n" + "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After the test body: fail it if a replay server it used saw an unmatched message."""
    try:
        result = yield
    except BaseException:
        report = _mismatch_report(item)
        if report:
            item.add_report_section("call", "wirecap", report)
        raise
    report = _mismatch_report(item)
    if report:
        pytest.fail(report, pytrace=False)
    return result
