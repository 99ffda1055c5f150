"""Replay: a capture played back to a live client (serve), to a live server (client), or as a CLI (exec).

The core (script, match, pool, rewrite, timing, secrets, wire) is sans-I/O; `http_server` (the one
port; HTTP/1.1 by h11), `ws_conn` (a WebSocket connection on websockets' sans-I/O protocol),
`ws_server` (a WebSocket session, given a `WsContext`), `client` / `http_client` and `process` are the
thin I/O shells around it. Imports go one way: `http_server` -> `ws_server` -> `ws_conn`.
"""
