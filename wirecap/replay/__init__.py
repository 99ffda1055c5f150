"""Replay: a capture played back to a live client (serve), to a live server (client), or as a CLI (exec).

The core (script, match, rewrite, timing) is sans-I/O; `ws_server`, `http_server`, `client` and
`process` are the thin I/O shells around it.
"""
