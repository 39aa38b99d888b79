"""JSON for the wire codecs' hot paths: msgspec where it gives json's answer, json otherwise.

Why: a bridged token is one chat chunk decoded and one event encoded, and the stdlib was the
largest single part of that. Measured on the 2-core benchmark machine (best of 11 × 20,000,
under load): a chat chunk decodes in 0.74 µs with msgspec vs 5.0 µs with `json.loads`; a
Responses event object encodes in 0.39 µs vs 5.3 µs with `json.dumps(separators=…)`
(docs/benchmarks/bridge.md has what that does to the bridge's CPU per request and per event).
msgspec rather than orjson: orjson reads an integer beyond 64 bits as a float, msgspec keeps
the int as json does (and checking for long digit runs first cost more than orjson's parse).

Same answers as json, by construction:
- `loads` falls back to `json.loads` whenever msgspec refuses a document (NaN / Infinity, a
  number out of float range, lone surrogates, a BOM, nesting past the recursion limit), so
  those keep json's value or json's error.
- `dumps` is compact JSON as UTF-8 bytes; non-ASCII text goes out as UTF-8 rather than
  `\\uXXXX` escapes (the same JSON value). What msgspec cannot encode (a lone surrogate, a
  type it does not know) is encoded by json instead, escapes and errors included.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any

import msgspec

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
_REFUSED = (msgspec.DecodeError, UnicodeEncodeError, RecursionError)


def loads(data: str | bytes, *, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """`json.loads(data, parse_constant=…)`, faster. Raises what json raises."""
    try:
        return _decode(data)
    except _REFUSED:
        return json.loads(data, parse_constant=parse_constant)


def loads_object(data: str | bytes) -> dict[str, Any] | None:
    """`loads(data)` if it is a JSON object, else None (a decoder's per-event call: junk and
    errors are skipped, not raised)."""
    try:
        obj = loads(data)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def read(
    data: str | bytes, *, parse_constant: Callable[[str], Any] | None = None
) -> tuple[Any, bool]:
    """(`loads(data)`, whether its strings are known to be valid Unicode): True when msgspec
    read the document, since it refuses lone surrogates; False when json did."""
    try:
        return _decode(data), True
    except _REFUSED:
        return json.loads(data, parse_constant=parse_constant), False


def dumps(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes (json's `separators=(",", ":")` for what msgspec cannot
    encode: a lone surrogate then stays a `\\ud800` escape, an unknown type a TypeError)."""
    try:
        return _encode(value)
    except (TypeError, UnicodeEncodeError):
        return json.dumps(value, separators=(",", ":")).encode()


# `json.dumps(text)` for a str, byte for byte (ASCII, `\uXXXX` escapes), without json.dumps's
# two Python calls: the text-delta encoders' per-token call.
string: Callable[[str], str] = json.encoder.encode_basestring_ascii
