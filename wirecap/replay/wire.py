"""HTTP/1.1 header fields between recorded form and h11's, for both I/O shells (`http_server`, `http_client`).

A capture holds headers as `{lower-case name: value}` (repeats joined with `, `, `set-cookie` with a
line break); h11 takes and gives `(name, value)` byte pairs and refuses to send a field that is not
legal on a wire. Sans-I/O: pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable

import h11

Fields = list[tuple[bytes, bytes]]


def join_headers(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """`(name, value)` pairs as a capture holds them: lower-case names, repeats joined with `, `
    (`set-cookie` with `\\n`, as the recorder joins them)."""
    out: dict[str, str] = {}
    for k, v in pairs:
        k = k.lower()
        if k in out:
            out[k] = f"{out[k]}\n{v}" if k == "set-cookie" else f"{out[k]}, {v}"
        else:
            out[k] = v
    return out


def received(fields: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header fields h11 parsed (names lower-cased by h11) as a capture holds them."""
    return join_headers((k.decode("latin-1"), v.decode("latin-1")) for k, v in fields)


def encode(pairs: Iterable[tuple[str, str]]) -> Fields:
    """Names and values as bytes, as they go on the wire (latin-1; a character beyond it becomes `?`;
    a value's surrounding blanks dropped, as HTTP does)."""
    return [(str(k).encode("latin-1", "replace"), str(v).strip().encode("latin-1", "replace")) for k, v in pairs]


def sendable(fields: Fields) -> Fields:
    """`fields` without the ones h11 refuses to send (a name that is not a token, a value with a line
    break or NUL, a second framing header: a recording may hold one, a wire must not)."""
    try:
        h11.Response(status_code=200, headers=fields)
        return fields
    except h11.LocalProtocolError:
        pass
    out: Fields = []
    for pair in fields:
        try:
            h11.Response(status_code=200, headers=[*out, pair])
        except h11.LocalProtocolError:
            continue
        out.append(pair)
    return out
