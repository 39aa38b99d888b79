"""Strict readers for request bodies, shared by the three decoders.

They raise `WireError` (400, naming the param) on wrong types and out-of-range values, as the
real APIs do, but ignore keys they do not know: real clients send many (Codex: tools of types
no other server knows; Claude Code: `thinking`, `context_management`, …). `param` is the path
as the protocol spells it; the callers build it.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from notes_cli.wire import fastjson
from notes_cli.wire.errors import invalid

_MISSING = object()
log = logging.getLogger("pdnotes.wire")

MAX_TOKEN_COUNT = 2**31
"""A usage count at or above this is absurd (no context or answer holds two billion tokens):
it is dropped, as are negative, non-integer and non-numeric counts (`token_count`)."""


def _reject_constant(name: str) -> float:
    # NaN / Infinity are not JSON; Python's json accepts them. Keep them as floats so the
    # numeric readers below can name the param that holds one (a 400, never a 200).
    return float(name)


def decode_json_object(raw: bytes | str | dict[str, Any]) -> dict[str, Any]:
    """The body as a JSON object, or 400. A lone surrogate (`"\\ud800"`: legal as a JSON
    escape, not as Unicode text) is refused here, because nothing downstream can encode it."""
    if isinstance(raw, dict):
        return raw
    try:
        data, valid_unicode = fastjson.read(raw, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise invalid(f"We could not parse the JSON body of your request: {exc}") from exc
    if not isinstance(data, dict):
        raise invalid("The request body must be a JSON object.")
    if valid_unicode:
        return data
    escaped = b"\\u" in raw if isinstance(raw, bytes) else "\\u" in raw
    if escaped:
        where = _lone_surrogate(data, "")
        if where is not None:
            raise invalid(
                f"The request body contains a lone surrogate (invalid Unicode) in "
                f"'{where or 'body'}'.",
                param=where or None,
            )
    return data


def _lone_surrogate(value: Any, path: str) -> str | None:
    """The path of the first string holding a lone surrogate, or None (iterative: bodies can
    be deep)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return where
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    continue
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return where
                stack.append((child, f"{where}.{key}" if where else key))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return None


def require_str(body: dict[str, Any], key: str, *, param: str | None = None) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        name = param or key
        raise invalid(f"'{name}' is required and must be a non-empty string.", param=name)
    return value


def optional_bool(body: dict[str, Any], key: str, *, param: str | None = None) -> bool | None:
    value = body.get(key)
    if value is None or isinstance(value, bool):
        return value
    name = param or key
    raise invalid(f"'{name}' must be a boolean.", param=name)


def optional_str(body: dict[str, Any], key: str, *, param: str | None = None) -> str | None:
    value = body.get(key)
    if value is None or isinstance(value, str):
        return value
    name = param or key
    raise invalid(f"'{name}' must be a string.", param=name)


def optional_enum(
    body: dict[str, Any], key: str, allowed: frozenset[str], *, param: str | None = None
) -> str | None:
    value = optional_str(body, key, param=param)
    if value is None or value in allowed:
        return value
    name = param or key
    choices = ", ".join(f"'{a}'" for a in sorted(allowed))
    raise invalid(f"Invalid value for '{name}': {value!r}; expected one of {choices}.", param=name)


def optional_int(
    body: dict[str, Any],
    key: str,
    *,
    low: int | None = None,
    high: int | None = None,
    param: str | None = None,
) -> int | None:
    """An integer in [low, high]; booleans are not integers here."""
    value = body.get(key)
    if value is None:
        return None
    name = param or key
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        value = int(value)  # `16.0` is an integer in JSON's eyes and OpenAI's
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"'{name}' must be an integer.", param=name)
    if (low is not None and value < low) or (high is not None and value > high):
        raise invalid(f"'{name}' must be {_range_text(low, high)}; got {value}.", param=name)
    return value


def optional_number(
    body: dict[str, Any],
    key: str,
    *,
    low: float | None = None,
    high: float | None = None,
    param: str | None = None,
) -> float | None:
    """A finite number in [low, high]."""
    value = body.get(key)
    if value is None:
        return None
    name = param or key
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(f"'{name}' must be a number.", param=name)
    if not math.isfinite(value):
        raise invalid(f"'{name}' must be a finite number; got {value}.", param=name)
    if (low is not None and value < low) or (high is not None and value > high):
        raise invalid(f"'{name}' must be {_range_text(low, high)}; got {value}.", param=name)
    return float(value)


def _range_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"between {low} and {high}"
    if low is not None:
        return f">= {low}"
    return f"<= {high}"


def optional_list(body: dict[str, Any], key: str, *, param: str | None = None) -> list[Any]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        name = param or key
        raise invalid(f"'{name}' must be an array.", param=name)
    return value


def optional_object(
    body: dict[str, Any], key: str, *, param: str | None = None
) -> dict[str, Any] | None:
    value = body.get(key)
    if value is None or isinstance(value, dict):
        return value
    name = param or key
    raise invalid(f"'{name}' must be an object.", param=name)


def require_object(item: Any, param: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise invalid(f"'{param}' must be an object.", param=param)
    return item


def stop_list(
    body: dict[str, Any], key: str, *, most: int, param: str | None = None
) -> tuple[str, ...]:
    """`stop`: a string or an array of at most `most` strings."""
    value = body.get(key)
    name = param or key
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        if len(value) > most:
            raise invalid(f"'{name}' takes at most {most} sequences.", param=name)
        return tuple(value)
    raise invalid(f"'{name}' must be a string or an array of strings.", param=name)


def json_text(value: Any) -> str:
    """Compact JSON (tool arguments, outputs that arrived as objects)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; compact JSON keeps the per-event cost low."""
    payload = data.encode() if isinstance(data, str) else fastjson.dumps(data)
    if event:
        return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"
    return b"data: " + payload + b"\n\n"


# An SSE data field as a JSON object, or None (junk lines are tolerated by decoders).
parse_sse_json = fastjson.loads_object


def error_text(error: Any) -> str:
    """The words of an error object in a stream or body: its `message`, else its `type`, else
    the object itself (`{"error": "rate limited"}` is a string)."""
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)


def as_object(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one: decoders read what servers send, and
    a broken or hostile one puts a string or a list where an object belongs."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty one (see `as_object`)."""
    return value if isinstance(value, list) else []


def token_count(usage: dict[str, Any], key: str, where: str) -> int | None:
    """`usage[key]` when it is a token count (an integer from 0 to below MAX_TOKEN_COUNT);
    None when it is absent or `null`, and when it is something else (a negative number, a
    float, a string, 1e30), which is dropped and logged: a relayed `input_tokens: -5` breaks
    whatever the client adds up. `where` names the field in the log (`usage.prompt_tokens`)."""
    value = usage.get(key)
    if value is None:
        return None
    if type(value) is int and 0 <= value < MAX_TOKEN_COUNT:
        return value
    log.warning(
        "the upstream's %s is %s, not a token count (an integer from 0 to 2**31): dropped",
        where,
        _describe_number(value),
    )
    return None


def _describe_number(value: Any) -> str:
    """A bad count as the log shows it: a number (not its 5,000 digits), or only its type
    (a string might be anything, a key included)."""
    if type(value) is int:
        return str(value) if abs(value) < 10**15 else "an integer beyond 10**15"
    if type(value) is float:
        return f"{value:.6g}"
    return f"a JSON {type(value).__name__}".replace("dict", "object").replace("list", "array")


def extra_fields(extra: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """What a server added to its usage object (the engine's `pd_timing`), less the fields
    the protocol's own usage JSON holds: a chat upstream's stray `input_tokens: -5` must not
    override the checked count a Responses client gets."""
    return {k: v for k, v in extra.items() if k not in known}
