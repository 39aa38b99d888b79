"""Masking: the one way a secret is ever shown.

A value is masked by *where it sits*, whatever it looks like: URL user-info, query values,
header values, the arguments of an `apiKeyHelper` command, the values of credential variables
(a 28-character `tt-…` key in `?key=` is as secret as an `sk-…` one). Only where a value's
position says nothing (free text) does its shape decide. `scrub` cleans text that came from
outside (a gateway's error body): it replaces the secrets a request actually sent, then anything
credential-shaped. Everything that shows a URL, a header, a helper command or gateway text calls
one of these functions; nothing else in pdnotes decides what is secret.

`scrub` takes time linear in the length of its text, whatever the text (a gateway, a model or a
client of the bridge chooses it): each free-text pattern starts a match only where a run of its
characters starts and gives nothing back (`*+`), and a key's pieces are masked in one rebuild.
It examines all of its text (no cap); what is shown is cut afterwards by the caller
(`gateway.errors.shortened`), so a cut never leaves part of a key unmasked.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from urllib.parse import quote, unquote, urlsplit, urlunsplit

# Looks like a credential rather than an environment-variable name.
_SECRET_SHAPE = re.compile(r"^(sk-|sk_|ak-|pk-|key-|Bearer\s)|^[A-Za-z0-9_\-\.]{32,}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNSENDABLE = re.compile(r"[^\t\x20-\x7e]")
_KEY_PREFIX = re.compile(r"(sk-|sk_|ak-|pk-|key-)[A-Za-z0-9_\-\.]*$")

_MIN_KNOWN = 8
"""Known secrets shorter than this are not searched for in text: replacing every `abc` in a
message would garble it, and no gateway issues keys that short."""

# Words that make a name (query parameter, header, variable) a credential's name.
_CREDENTIAL_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "auth",
        "authorization",
        "sig",
        "signature",
        "credential",
        "credentials",
        "session",
        "sessionid",
        "bearer",
        "jwt",
        "cookie",
        "otp",
    }
)
_CREDENTIAL_FRAGMENTS = ("apikey", "api_key", "api-key", "token", "secret", "passw", "auth")

PUBLIC_QUERY_NAMES = frozenset(
    {"api-version", "api_version", "version", "format", "alt", "beta", "region", "model"}
)
"""Query parameters whose values are shown as they are (unless they look like a key); every
other query value is masked, since gateways that take a key in the URL name it freely."""

PUBLIC_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "content-type",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "openai-organization",
        "openai-project",
        "x-title",
        "http-referer",
        "referer",
        "originator",
        "version",
    }
)
"""Headers whose values are shown as they are (unless they look like a key); every other
header value is masked (`x-api-key`, `Authorization`, `cf-access-token`, `X-Whatever`…)."""

_AUTH_SCHEMES = ("bearer", "basic", "token", "apikey", "key")
_SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1"})
_FLAG = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]{0,30}$")
_CAMEL = re.compile(r"[a-z0-9]+|[A-Z][a-z0-9]*")

# Free text: what a key looks like when nothing says where it sits.
# Every pattern that runs on free text is linear in its length (a gateway's body is untrusted):
# a match may only start where a run of its characters starts (the lookbehinds), and possessive
# quantifiers (`*+`) never give back what the next token cannot use. `\b` before the scheme let
# a match start after every `.` of `a.a.a.a…`, each scanning to the run's end: quadratic.
_URL_IN_TEXT = re.compile(
    r"(?<![a-zA-Z0-9+.-])([0-9+.-]*+)([a-zA-Z][a-zA-Z0-9+.-]*+://[^\s\"'<>`]++)"
)
# Case-sensitive, the value 8+ characters: "a token in settings.json" is prose, not a header.
_AUTH_IN_TEXT = re.compile(r"\b(Bearer|bearer|Basic|Token)(\s++)([^\s\"',;)…]{8,})")
# The name starts where its run starts (`x1` in `_x1_token=` is a prefix kept as it is): once
# let start at every letter of a 10 KB run of letters, this pattern took seconds.
_ASSIGNMENT_IN_TEXT = re.compile(
    r"([\"']?)(?<![A-Za-z0-9_.-])([0-9_.-]*+)([A-Za-z][A-Za-z0-9_.-]*+)\1"
    r"(\s*+[:=]\s*+)([\"']?)([^\s\"',;&)}\]]++)"
)
_PREFIXED_KEY = re.compile(r"(?<![A-Za-z0-9])(?:sk|ak|pk)[-_][A-Za-z0-9_\-]{6,}")
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-.+=])[A-Za-z0-9_\-.+=]{16,}")
_TOKEN_SEGMENT = re.compile(r"[^-_.]{16,}")


def mask(secret: str | None) -> str:
    """`sk-abcdef1234` -> `sk-…1234`; short or empty values give `…` / `(unset)`."""
    if not secret:
        return "(unset)"
    prefix = ""
    for p in ("sk-ant-", "sk-", "sk_", "ak-", "pk-"):
        if secret.startswith(p):
            prefix = p
            break
    if len(secret) < len(prefix) + 8:
        return prefix + "…"
    return f"{prefix}…{secret[-4:]}"


def looks_like_env_name(value: str) -> bool:
    return bool(_ENV_NAME.match(value)) and not looks_like_secret(value)


def check_env_name(flag: str, name: str | None) -> None:
    """A flag that takes a variable NAME must not be given a key (nor show it back)."""
    from notes_cli.errors import UsageError

    if name and not looks_like_env_name(name):
        raise UsageError(
            f"{flag} takes the NAME of an environment variable, not a key",
            fix=f"export MY_KEY=<the key> and pass {flag} MY_KEY",
        )


def unsendable(value: str) -> str | None:
    """Where `value` has a character an HTTP header cannot carry (beyond ASCII, or a control
    character), said without the value: "U+201D at position 31 of 32". A key pasted with a
    typographic quote or a line end crashed the HTTP client before anything was sent."""
    found = _UNSENDABLE.search(value)  # (a regex: this runs on every header of every request)
    if found is None:
        return None
    return f"U+{ord(found.group()):04X} at position {found.start() + 1} of {len(value)}"


def looks_like_prefixed_key(value: str) -> bool:
    """A key by its issuer's prefix (`sk-…`, `sk-ant-…`, `ak-…`), long enough to be one and
    with the long random run a key has (`/key-value-gateway-service/` is words): what pdnotes
    refuses in a URL's path. Unprefixed random runs (a Cloudflare account id, a UUID) are
    masked when shown, but a path may legitimately hold them."""
    if len(value) < 20 or not _KEY_PREFIX.match(value):
        return False
    return any(len(run) >= 12 for run in re.split(r"[-_.]", value))  # a random run, not words


def looks_like_secret(value: str) -> bool:
    """True for values shaped like API keys (so a pasted key in `env_key` is caught)."""
    if not value:
        return False
    if value.isupper() and _ENV_NAME.match(value):
        return False  # TAOTOKEN_API_KEY is a name, however long
    return bool(_SECRET_SHAPE.search(value))


def is_credential_name(name: str) -> bool:
    """True when a parameter, header or variable of this name carries a credential:
    `api_key`, `key`, `access_token`, `apiKey`, `x-api-key`, `sig`, `ANTHROPIC_AUTH_TOKEN`…"""
    lowered = name.lower()
    if any(fragment in lowered for fragment in _CREDENTIAL_FRAGMENTS):
        return True
    words = {w.lower() for part in re.split(r"[-_.\s]+", name) for w in _CAMEL.findall(part)}
    return bool(words & _CREDENTIAL_WORDS) or lowered in _CREDENTIAL_WORDS


# --------------------------------------------------------------------------- by position


def mask_query_value(name: str, value: str) -> str:
    """A query parameter's value as it may be shown."""
    lowered = name.lower()
    public = lowered in PUBLIC_QUERY_NAMES or lowered.startswith("utm_")
    if public and not looks_like_secret(value):
        return value
    if len(value) < _MIN_KNOWN and not is_credential_name(name):
        return value  # `?page=2`: too short to be anyone's key
    return mask(value) if value else value


def mask_header_value(name: str, value: str) -> str:
    """A header's value as it may be shown: `Authorization: Bearer sk-…1234`."""
    if name.lower() in PUBLIC_HEADERS and not looks_like_secret(value):
        return value
    scheme, space, rest = value.strip().partition(" ")
    if space and scheme.lower() in _AUTH_SCHEMES and rest.strip():
        return f"{scheme} {mask(rest.strip())}"
    return mask(value) if value else value


def header_lines(text: str) -> dict[str, str]:
    """`ANTHROPIC_CUSTOM_HEADERS` text (one `Name: value` per line) as a dict."""
    pairs = (line.partition(":") for line in text.splitlines())
    return {name.strip(): value.strip() for name, sep, value in pairs if sep}


def mask_header_block(text: str) -> str:
    """`ANTHROPIC_CUSTOM_HEADERS` (one `Name: value` per line) with its values masked."""
    lines = []
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        lines.append(f"{name}: {mask_header_value(name.strip(), value.strip())}" if sep else line)
    return "\n".join(lines)


@lru_cache(maxsize=256)
def mask_url(url: str) -> str:
    """The URL fit to print: user-info replaced by `***`, query values masked (all but a few
    public names), path segments shaped like a key masked. Unparseable text is scrubbed.
    Cached: the gateway client shows the same URL for every request of a bench run (40 µs
    a call uncached, under load, against about 10 µs for the old password-only masking)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return scrub(url, _urls=False)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    path = "/".join(
        ";".join(_mask_path_piece(piece) for piece in segment.split(";"))
        for segment in parts.path.split("/")
    )
    query = (
        "&".join(_mask_query_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
    )
    fragment = scrub(parts.fragment, _urls=False) if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


_GEMINI_METHODS = (":streamGenerateContent", ":generateContent", ":countTokens")
"""Gemini's `models/<model>:<method>` segment: the method is public, the model judged alone."""


def _mask_path_piece(piece: str) -> str:
    """A path segment, or one of its `;name=value` parameters, masked when it is key-shaped."""
    for method in _GEMINI_METHODS:
        if piece.endswith(method) and len(piece) > len(method):
            return _mask_path_piece(piece[: -len(method)]) + method
    name, sep, value = piece.partition("=")
    if sep:
        return f"{name}={_mask_path_piece(value)}" if value else piece
    plain = unquote(piece)
    return mask(plain) if piece and (looks_like_secret(plain) or looks_like_token(plain)) else piece


def _mask_query_pair(pair: str) -> str:
    name, sep, value = pair.partition("=")
    if not sep:
        # `?sk-…` alone: a bare value in the query is as likely a key as anything.
        return mask(unquote(name)) if len(name) >= _MIN_KNOWN else name
    shown = mask_query_value(unquote(name), unquote(value))
    return f"{name}={value if shown == unquote(value) else shown}"


def mask_command(command: str) -> str:
    """An `apiKeyHelper` command fit to print: programs, flags, paths, operators and `$VAR`
    references stay; every other argument is masked (`echo sk-…` -> `echo …`)."""
    return " ".join(shown for shown, _ in _command_words(command))


def command_secrets(command: str) -> tuple[str, ...]:
    """The parts of a helper command that `mask_command` hides (what a diff must mask)."""
    return tuple(secret for _, hidden in _command_words(command) for secret in hidden)


def _command_words(command: str) -> list[tuple[str, tuple[str, ...]]]:
    """(word as shown, the secrets it hides) for each space-separated word."""
    result: list[tuple[str, tuple[str, ...]]] = []
    program_next = True
    program = ""
    for word in command.split(" "):
        core = word.strip("\"'")
        name, eq, value = core.partition("=")
        secret = ""
        if not core or core in _SHELL_OPERATORS:
            program_next = program_next or bool(core)  # after `|` or `&&` comes a program
        elif eq and _ENV_NAME.match(name):
            secret = value  # `KEY=value helper`: a variable set for the helper
        elif program_next:
            secret = core if looks_like_token(core) else ""
            program, program_next = core.rsplit("/", 1)[-1], False
        elif "://" in core:
            shown = mask_url(core)
            hidden = (url_secrets(core) or (core,)) if shown != core else ()
            result.append((word.replace(core, shown), hidden))
            continue
        elif not _command_word_is_public(core, program):
            secret = core
        if secret:
            result.append((word.replace(secret, mask(secret)), (secret,)))
        else:
            result.append((word, ()))
    return result


def _command_word_is_public(word: str, program: str) -> bool:
    if word.startswith("$") or _FLAG.match(word):
        return True
    if word[0] in "/~." and "/" in word:
        return True  # a path: the helper reads a file, it does not hold the key
    return bool(_ENV_NAME.match(word) and (word.isupper() or program in ("printenv", "getenv")))


def mask_env_value(name: str, value: str) -> str:
    """A client variable's value as it may be shown."""
    if name == "ANTHROPIC_CUSTOM_HEADERS":
        return mask_header_block(value)
    if is_credential_name(name):
        return mask(value)
    if "://" in value:
        return mask_url(value)
    return mask(value) if looks_like_secret(value) else value


def url_secrets(url: str) -> tuple[str, ...]:
    """The user-info and masked query values of `url` (what a diff must mask)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    userinfo = unquote(parts.netloc.rsplit("@", 1)[0]) if "@" in parts.netloc else ""
    found = userinfo.split(":") if userinfo else []
    if userinfo:
        # What an HTTP client sends for it: `Authorization: Basic base64(user:password)`.
        found.append(base64.b64encode(userinfo.encode()).decode())
    for pair in parts.query.split("&") if parts.query else ():
        name, _, value = pair.partition("=")
        if value and mask_query_value(unquote(name), unquote(value)) != unquote(value):
            found += [value, unquote(value)]
    return tuple(s for s in found if s)


def position_secrets(
    key: str | None = None,
    headers: Mapping[str, str] | None = None,
    query_params: Mapping[str, str] | None = None,
    url: str = "",
) -> tuple[str, ...]:
    """The values a request carries in credential positions (the key, non-public header
    values, non-public query values, the user-info and query values of its `url`): what
    `scrub` must remove from that request's answers."""
    found: set[str] = set(url_secrets(url)) if url else set()
    if key:
        found.add(key)
    for name, value in (headers or {}).items():
        if mask_header_value(name, value) != value:
            scheme, space, rest = value.strip().partition(" ")
            found.add(rest.strip() if space and scheme.lower() in _AUTH_SCHEMES else value)
    for name, value in (query_params or {}).items():
        if mask_query_value(name, value) != value:
            found.add(value)
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


# --------------------------------------------------------------------------- free text


def scrub(text: str, known: Iterable[str] = (), *, _urls: bool = True) -> str:
    """Text from outside (a gateway body, an exception) fit to print: each `known` secret
    (the key and headers actually sent) replaced by its mask, then URLs masked, then
    `Bearer …`, `api_key=…` / `"token": "…"` and key-shaped words masked."""
    if not text:
        return text
    text = mask_sent(text, known)
    if _urls:
        text = _URL_IN_TEXT.sub(lambda m: m[1] + mask_url(m[2]), text)
    text = _AUTH_IN_TEXT.sub(lambda m: f"{m[1]}{m[2]}{mask(m[3])}", text)
    text = _ASSIGNMENT_IN_TEXT.sub(_mask_assignment, text)
    text = _PREFIXED_KEY.sub(lambda m: mask(m.group(0)), text)
    return _LONG_TOKEN.sub(
        lambda m: mask(m.group(0)) if looks_like_token(m.group(0)) else m.group(0), text
    )


def mask_sent(text: str, sent: Iterable[str]) -> str:
    """`text` with each secret a request `sent` (`position_secrets`: the key pdnotes put in
    the request) masked wherever it is echoed: whole, URL-quoted, or in pieces of 12 or more
    characters. Judged by where the value sat, not by its shape, so it suits text that is
    meant to be kept as written (a model's answer, written into a note): nothing else in it
    changes. `scrub` does this first, then masks credential-shaped words too."""
    if not text:
        return text
    secrets = {s for s in sent if s and len(s) >= _MIN_KNOWN}
    for secret in sorted(secrets, key=len, reverse=True):
        for form in _echoed_forms(secret):
            text = text.replace(form, mask(secret))
    for secret in secrets:
        text = _mask_fragments(text, secret)
    return text


def _echoed_forms(secret: str) -> tuple[str, ...]:
    """The ways a server echoes a secret whole: as is, and URL-quoted (a base64 key's `+/=`
    become `%2B…`, leaving no run long enough for `_mask_fragments`). Escapes that leave runs
    as they were (JSON's `\u002d`) are `_mask_fragments`' to catch; a base64 `Basic` value is
    masked by its shape."""
    quoted = quote(secret, safe="")
    return (quoted, secret) if quoted != secret else (secret,)


_FRAGMENT = 12  # a run of 12 characters of a key is the key's, not chance
_GRAM = _FRAGMENT // 2
_RUN = re.compile(r"[A-Za-z0-9_\-.+/=%]*+")  # the characters a key's run is made of


def _mask_fragments(text: str, secret: str) -> str:
    """Mask any run of `text` holding 12 or more consecutive characters of `secret`: a key
    wrapped over two lines, or cut short, leaves such pieces where `replace` finds none.
    Linear in `text` for each of the key's windows: the runs are found first, then the text is
    rebuilt once (replacing in place, one copy of the text per piece, was quadratic)."""
    if len(secret) < _FRAGMENT + 4:
        return text
    spans: list[tuple[int, int]] = []
    backwards = ""
    for window in {secret[i : i + _FRAGMENT] for i in range(len(secret) - _FRAGMENT + 1)}:
        at = text.find(window)
        while at >= 0:
            backwards = backwards or text[::-1]
            behind = len(text) - at  # where text[at - 1] sits in `backwards`
            begin = at - (_run_end(backwards, behind) - behind)
            end = _run_end(text, at + _FRAGMENT)
            spans.append((begin, end))
            at = text.find(window, end)
    if not spans:
        return text
    pieces: list[str] = []
    shown_to = 0
    merged: list[list[int]] = []
    for begin, end in sorted(spans):
        if merged and begin < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    for begin, end in merged:
        pieces += [text[shown_to:begin], "…"]
        if secret.endswith(text[end - 4 : end]):
            pieces.append(secret[-4:])
        shown_to = end
    pieces.append(text[shown_to:])
    return "".join(pieces)


def _run_end(text: str, at: int) -> int:
    found = _RUN.match(text, at)  # always matches (`*`), perhaps empty
    return found.end() if found else at


def _mask_assignment(match: re.Match[str]) -> str:
    quote, lead, name, sep, vquote, value = match.groups()
    if not is_credential_name(name) or not _assigned_secret(value):
        return match.group(0)
    return f"{quote}{lead}{name}{quote}{sep}{vquote}{mask(value)}"


def _assigned_secret(value: str) -> bool:
    """In `api_key=VALUE` free text: a value that is not already masked, not a variable name
    (`env_key = "GW_TOKEN"`) and not a plain word (`"apiKeyHelper": "printenv …"`)."""
    if "…" in value or (value.isupper() and _ENV_NAME.match(value)) or len(value) < _MIN_KNOWN:
        return False
    return len(value) >= 16 or any(c.isdigit() for c in value) or looks_like_secret(value)


def looks_like_token(value: str) -> bool:
    """A key-like run: some `-`/`_`/`.`-separated segment of 16+ characters mixing letters and
    digits. Model ids (`claude-3-5-sonnet-20241022`), UUIDs and words have no such segment;
    random keys (`tt-…`, hex, base64) almost always do."""
    if value.isupper() and _ENV_NAME.match(value):
        return False
    return any(
        any(c.isdigit() for c in seg) and any(c.isalpha() for c in seg)
        for seg in _TOKEN_SEGMENT.findall(value)
    )


class SentMasker:
    """`mask_sent` over text that arrives in pieces (a streamed answer relayed by the bridge):
    `feed` each piece, then `flush` at the end (or before anything that is not text). A key
    split across pieces is masked as if it came whole: a piece's last characters that could
    begin a secret (at most its length - 1) are held until the next piece shows whether they
    do, so nothing is buffered but that tail. Per piece (the bridge's per-token path): one `in`
    per echoed form, a `find` of each form's first character in the piece's tail, and a set
    look-up per 12-character window (none for a token shorter than that); `mask_sent` itself
    runs only on a piece that holds a secret."""

    __slots__ = ("sent", "forms", "firsts", "chars", "windows", "grams", "reach", "held")

    def __init__(self, sent: Iterable[str]) -> None:
        parts = _masker_parts(tuple(sorted({s for s in sent if s and len(s) >= _MIN_KNOWN})))
        self.sent, self.forms, self.firsts, self.chars, self.windows, self.grams = parts
        self.reach = max((len(form) for form in self.forms), default=1) - 1  # the most held
        self.held = ""

    def __bool__(self) -> bool:
        return bool(self.sent)

    def feed(self, text: str) -> str:
        """What of `text` (after what was held) can be shown now, masked."""
        if self.held:
            text, self.held = self.held + text, ""
        if not text:
            return text
        secret = self._holds_secret(text)
        if secret:
            text = self._mask_whole(text)  # first: the tail held below never splits a key
        keep = self._tail(text)
        if keep:
            text, self.held = text[:-keep], text[-keep:]
        if secret and self._holds_secret(text):
            return mask_sent(text, self.sent)
        return text

    def flush(self) -> str:
        """The held tail, masked: the answer ended, or something other than text follows."""
        held, self.held = self.held, ""
        return mask_sent(held, self.sent) if held else held

    def _holds_secret(self, text: str) -> bool:
        for form in self.forms:
            if form in text:
                return True
        size = len(text)
        if size < _FRAGMENT:
            return False
        grams = self.grams
        for at in range(0, size - _GRAM + 1, _GRAM):
            if text[at : at + _GRAM] in grams:
                break
        else:
            return False
        windows = self.windows
        return any(text[i : i + _FRAGMENT] in windows for i in range(len(text) - _FRAGMENT + 1))

    def _mask_whole(self, text: str) -> str:
        for secret in self.sent:
            for form in _echoed_forms(secret):
                text = text.replace(form, mask(secret))
        return text

    def _tail(self, text: str) -> int:
        """How many of `text`'s last characters could begin an echoed form (0: none)."""
        if text[-1] not in self.chars:
            return 0  # (the per-token case: a key has no such character, so cannot end here)
        size = len(text)
        start = size - self.reach if size > self.reach else 0
        if len(self.firsts) == 1 and text.find(self.firsts, start) < 0:
            return 0  # (the per-token case: no character in the tail can start a key)
        longest = 0
        for form in self.forms:
            at = text.find(form[0], max(0, size - len(form) + 1))
            while at >= 0:
                if form.startswith(text[at:]):
                    longest = max(longest, size - at)
                    break
                at = text.find(form[0], at + 1)
        return longest


@lru_cache(maxsize=64)
def _masker_parts(
    secrets: tuple[str, ...],
) -> tuple[tuple[str, ...], tuple[str, ...], str, frozenset[str], frozenset[str], frozenset[str]]:
    """What a `SentMasker` looks for, made once per set of keys (a bridge makes a masker per
    streamed answer, always for the same keys: ~40 µs each uncached): the secrets longest
    first, their echoed forms, the forms' first characters, every character of the forms, the
    12-character windows of the secrets, and the 6-character pieces of those windows (a
    12-character window always holds one starting at a multiple of 6, so a text's pieces at
    0, 6, 12… are looked up first: a third of the look-ups)."""
    sent = tuple(sorted(secrets, key=len, reverse=True))
    forms = tuple(form for s in sent for form in _echoed_forms(s))
    windows = frozenset(
        s[i : i + _FRAGMENT]
        for s in sent
        if len(s) >= _FRAGMENT + 4
        for i in range(len(s) - _FRAGMENT + 1)
    )
    grams = frozenset(w[i : i + _GRAM] for w in windows for i in range(_GRAM + 1))
    firsts = "".join(sorted({form[0] for form in forms}))
    return sent, forms, firsts, frozenset("".join(forms)), windows, grams
