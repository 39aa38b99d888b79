"""Base-URL hygiene shared by the config writers and the doctor.

Clients join `base_url + suffix` as plain strings, so anything pasted after the API root (a
`?utm_source=…` query, a copied `/chat/completions`, a fragment) produces a broken request URL.
`clean_base_url` turns a pasted URL into the root the client wants and says what it changed.
Given `credential_fix` (the config writers pass it) it also refuses a URL that carries a key —
user-info, or a credential-shaped query value — since writing it would put the key in a file
(and, for Codex, in a 0644 one): the fix names the client's way to read the key from a variable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit, urlunsplit

from notes_cli.errors import InputError, UsageError
from notes_cli.secrets import (
    is_credential_name,
    looks_like_prefixed_key,
    looks_like_secret,
    looks_like_token,
    mask_url,
)

OPENAI_ENDPOINT_SUFFIXES = ("/chat/completions", "/responses", "/completions")
MESSAGES_ENDPOINT_SUFFIXES = ("/v1/messages", "/messages")


@dataclass(frozen=True)
class CleanUrl:
    """The cleaned root, query parameters to send separately, and one note per change."""

    base_url: str
    query_params: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


NO_SCHEME = "it has no http:// or https:// scheme"
_PORT = re.compile(r"[0-9]{1,5}")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f-\x9f]")


def url_problem(url: str) -> str | None:
    """Why `url` is not an http(s) URL a client can call, in words; None when it is one.

    The one judge of a URL's shape, for every URL a flag or a file gives: `urlsplit` raises on
    an unclosed or non-IPv6 `[host]` and on a port that is not a number, and accepts one past
    65535 (which httpx, Node and the clients then refuse or crash on)."""
    if _CONTROL_OR_SPACE.search(url):
        return "it contains a space or control character"
    try:
        parts = urlsplit(url)
    except ValueError:
        return "its [IPv6 address] is not closed with ] or is not an IPv6 address"
    if parts.scheme not in ("http", "https"):
        return NO_SCHEME
    hostport = parts.netloc.rpartition("@")[2]
    host, port = hostport, ""
    if hostport.startswith("["):
        host, _, rest = hostport.partition("]")
        if rest and not rest.startswith(":"):
            return f"{rest!r} follows its [IPv6 address] where only :PORT may"
        port = rest[1:]
        has_port = bool(rest)
    else:
        has_port = ":" in hostport
        host, _, port = hostport.rpartition(":") if has_port else (hostport, "", "")
    if not host.strip("[]"):
        return "it has no host"
    if ":" in host and not host.startswith("["):
        return "its host holds a ':' (an IPv6 address goes in [brackets], a port once)"
    if has_port and port and not (_PORT.fullmatch(port) and 1 <= int(port) <= 65535):
        return f"its port {port!r} is not a whole number from 1 to 65535"
    return None


def require_url(
    url: str, *, flag: str, example: str = "https://host/v1 or http://127.0.0.1:8000/v1"
) -> str:
    """`url` stripped when `url_problem` finds nothing; else a `UsageError` naming `flag`
    (the URL shown masked: a pasted one may carry a key)."""
    url = url.strip()
    why = url_problem(url)
    if why is not None:
        raise UsageError(
            f"{flag} {shown_url(url)!r} is not a usable URL: {why}",
            fix=f"give {flag} a URL like {example}",
        )
    return url


def require_configured_url(url: str, *, client: str, source: str | None) -> str:
    """`url`, read from `client`'s config (`source` names the file), when `url_problem` finds
    nothing; else an `InputError` naming the file and how to mend it."""
    why = url_problem(url)
    if why is not None:
        where = source or f"{client}'s config"
        raise InputError(
            f"the base URL {shown_url(url)!r} in {where} is not a usable URL: {why}",
            fix=f"correct it there (pdnotes doctor --client {client} names the line), or "
            f"rewrite it: pdnotes config {client} --base-url URL",
        )
    return url


def shown_url(url: str) -> str:
    """`url` fit to print, parseable or not: user-info (`user:key@`) masked, key-shaped
    values scrubbed."""
    from notes_cli.secrets import scrub

    if url_problem(url) is None:
        return mask_url(url)
    scheme, sep, rest = url.partition("://")
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in authority:
        rest = "***@" + rest[len(authority.rsplit("@", 1)[0]) + 1 :]
    return scrub(scheme + sep + rest)


def split(url: str) -> SplitResult | None:
    """`urlsplit(url)` for a URL `url_problem` accepts; None for any other."""
    return urlsplit(url) if url_problem(url) is None else None


def has_scheme(url: str) -> bool:
    """An http(s) URL with a host and a valid port (see `url_problem`)."""
    return split(url) is not None


def host_of(url: str) -> str:
    """`host` or `host:port` of a URL, lower-cased ("" when it has none or is malformed)."""
    parts = split(url)
    return parts.netloc.lower().rsplit("@", 1)[-1] if parts else ""


def hostname_of(url: str) -> str | None:
    """The host name of a URL without port or brackets (None when malformed)."""
    parts = split(url)
    return parts.hostname if parts else None


def port_of(url: str) -> int | None:
    """The URL's explicit port (None when it names none or is malformed)."""
    parts = split(url)
    return parts.port if parts else None


def path_of(url: str) -> str:
    """The URL's path ("" when malformed)."""
    parts = split(url)
    return parts.path if parts else ""


def is_loopback(url: str) -> bool:
    """The URL names this machine (127.0.0.0/8, ::1, localhost): a local server such as
    llama-server, which serves without a key unless started with one."""
    import ipaddress

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_suffix(url: str, suffixes: tuple[str, ...]) -> str | None:
    """The endpoint path a pasted URL already ends in, if any."""
    path = path_of(url).rstrip("/")
    return next((s for s in suffixes if path.endswith(s)), None)


def has_v1_suffix(url: str) -> bool:
    return path_of(url).rstrip("/").endswith("/v1")


def url_credential(url: str) -> str | None:
    """Where `url` carries a credential, said without it: its user-info, a query parameter
    whose name (`api_key`, `token`, `sig`…) or value (`sk-…`, a long random run) says it is
    a key, or a path segment (or `;param`) that starts like a key (`/sk-ant-…/v1`); None when
    it carries none. One judge for what `config` refuses and what `doctor` flags."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" in parts.netloc:
        return "its user-info (user:key@host)"
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if any(looks_like_secret(v) or looks_like_token(v) for v in (name, value)):
            return "a query parameter"
        if is_credential_name(name) and value:
            return f"the query parameter {name!r}"
    for segment in parts.path.split("/"):
        for piece in unquote(segment).split(";"):
            if looks_like_prefixed_key(piece.partition("=")[2] or piece):
                return "a path segment"
    return None


def refuse_credentials(url: str, *, fix: str) -> None:
    """Raise `UsageError` (never echoing the value) when `url` carries a credential
    (`url_credential`)."""
    where = url_credential(url)
    if where is not None:
        raise UsageError(
            f"the base URL carries a key in {where} ({mask_url(url)}); pdnotes does not write "
            "a key into a config file",
            fix=fix,
        )


def cleaned(change: str) -> str:
    """A note saying how the pasted base URL was changed; the other notes `config` prints are
    plain sentences (what the gateway's /models said, a key moved out of the file…)."""
    return f"cleaned the base URL: {change}"


def clean_base_url(
    url: str,
    *,
    suffixes: tuple[str, ...],
    strip_v1: bool = False,
    credential_fix: str | None = None,
) -> CleanUrl:
    """Clean a pasted base URL: drop `utm_*` parameters and fragments, move other query
    parameters to `query_params`, strip a pasted endpoint suffix (and `/v1` when the gateway
    forbids it) and a trailing slash. Raises `UsageError` for a URL without http(s)://, and
    with `credential_fix` for one that carries a key (see `refuse_credentials`)."""
    url = url.strip()
    if "://" not in url:
        # Masked as if it had a scheme: a pasted `user:key@host` must not be echoed either.
        shown = mask_url("https://" + url.lstrip("/")).removeprefix("https://")
        raise UsageError(
            f"base URL {shown!r} has no http:// or https:// scheme",
            fix=f"pass the full URL, e.g. --base-url https://{shown}",
        )
    url = require_url(url, flag="--base-url")
    if credential_fix is not None:
        refuse_credentials(url, fix=credential_fix)
    parts = urlsplit(url)
    notes: list[str] = []
    kept: dict[str, str] = {}
    dropped: list[str] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower().startswith("utm_"):
            dropped.append(key)
        else:
            kept.setdefault(key, value)
    if dropped:
        notes.append(cleaned(f"removed tracking parameters {', '.join(sorted(set(dropped)))}"))
    if kept:
        notes.append(
            cleaned(
                "moved query parameters to query_params (the client appends its path after the "
                "URL): " + ", ".join(kept)
            )
        )
    if parts.fragment:
        notes.append(cleaned(f"removed the fragment #{parts.fragment}"))
    path = parts.path.rstrip("/")
    suffix = next((s for s in suffixes if path.endswith(s)), None)
    if suffix:
        path = path[: -len(suffix)]
        notes.append(
            cleaned(f"removed the pasted endpoint path {suffix} (the client appends it itself)")
        )
    if strip_v1 and path.endswith("/v1"):
        path = path[: -len("/v1")]
        notes.append(
            cleaned("removed /v1: this gateway serves its API without it (a /v1 gives a 404)")
        )
    base = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return CleanUrl(base_url=base, query_params=kept, notes=tuple(notes))


def appended_root(
    url: str,
    *,
    policy: str,
    client: str,
    after: str,
    credential_fix: str,
    messages: bool = False,
) -> CleanUrl:
    """A pasted base URL cleaned for a client that appends its path to it and cannot send query
    parameters after that path (`after` words it: "its /chat/completions path"): the OpenAI
    root, or with `messages` the Anthropic one (no /v1: the client appends /v1/messages).
    `policy` is the gateway's /v1 rule ("required", "forbidden" or "any"): /v1 is stripped
    where it is forbidden and added where it is required."""
    cleaned_url = clean_base_url(
        url,
        suffixes=MESSAGES_ENDPOINT_SUFFIXES if messages else OPENAI_ENDPOINT_SUFFIXES,
        strip_v1=messages or policy == "forbidden",
        credential_fix=credential_fix,
    )
    if cleaned_url.query_params:
        raise UsageError(
            f"{client} cannot send query parameters ({', '.join(cleaned_url.query_params)}) "
            f"after {after}",
            fix="use a base URL without a query string",
        )
    if not messages and policy == "required" and not has_v1_suffix(cleaned_url.base_url):
        note = cleaned("added /v1: this gateway serves its OpenAI API under /v1")
        return CleanUrl(cleaned_url.base_url + "/v1", {}, (*cleaned_url.notes, note))
    return cleaned_url
