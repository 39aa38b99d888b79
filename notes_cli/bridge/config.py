"""What a bridge serves: the upstream (and its ordered fallbacks), their keys' variables, where
to listen, model renames.

`pdnotes config codex|claude --bridge` records the upstream in `$PDNOTES_HOME/bridge.json` so a
bare `pdnotes bridge serve` (and the installed service) serves it; flags override the record.
The record holds variable NAMES, never keys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from notes_cli import fileio, paths
from notes_cli.clients.urls import refuse_credentials, require_url, url_problem
from notes_cli.errors import InputError, UsageError
from notes_cli.secrets import check_env_name, looks_like_env_name, unsendable

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
RECORD_NAME = "bridge.json"
MAX_UPSTREAMS = 8  # the first and its fallbacks: a request tries each at most once


@dataclass(frozen=True)
class Fallback:
    """An upstream tried, in order, when the ones before it are down (`bridge.fallback`)."""

    upstream: str
    upstream_key_env: str | None = None


@dataclass(frozen=True)
class BridgeConfig:
    """One bridge. `upstream` is the chat endpoint's API root (the URL before
    `/chat/completions`); `fallbacks` are tried after it, in order, when it is down or answers
    5xx / 429 before its answer starts; `model_map` renames client model ids before they go
    upstream."""

    upstream: str
    upstream_key_env: str | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    model_map: dict[str, str] = field(default_factory=dict)
    api_key_env: str | None = None
    model: str | None = None  # what `pdnotes config` pointed the clients at (informational)
    fallbacks: tuple[Fallback, ...] = ()
    # the longest a non-streamed answer may take, head to last byte (`serve --answer-timeout`;
    # not recorded: 600 s unless the command line says otherwise)
    answer_timeout: float = 600.0

    @property
    def upstreams(self) -> list[Fallback]:
        """Every upstream in the order tried, the first one first."""
        return [Fallback(self.upstream, self.upstream_key_env), *self.fallbacks]

    @property
    def root_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def v1_base_url(self) -> str:
        """Codex's `base_url` (it appends `/responses`)."""
        return self.root_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic root: Claude Code's `ANTHROPIC_BASE_URL` (it appends `/v1/messages`)."""
        return self.root_url

    def upstream_model(self, model: str) -> str:
        return self.model_map.get(model, model)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["answer_timeout"]  # a flag of `serve`, not part of the record
        return data


def parse_model_map(pairs: list[str]) -> dict[str, str]:
    """`FROM=TO` flags as a dict; a pair without `=` is a usage error."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        source, sep, target = pair.partition("=")
        if not sep or not source.strip() or not target.strip():
            raise UsageError(
                f"--model-map {pair!r} is not FROM=TO",
                fix="e.g. --model-map gpt-5.5=glm-4.6 (repeat the flag for more)",
            )
        mapping[source.strip()] = target.strip()
    return mapping


def record_path() -> Path:
    return paths.pdnotes_home() / RECORD_NAME


def load_record() -> BridgeConfig | None:
    """The recorded bridge, or None when `pdnotes config --bridge` never ran. A record that is
    not JSON, or holds a value of the wrong kind (a port that is not 0-65535, a variable name
    that is not one), is an `InputError` naming the file: nothing downstream sees it."""
    path = record_path()
    text = fileio.read_text(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except RecursionError as exc:  # `[[[[…` nested past Python's recursion limit
        raise _bad_record(path, "it is nested too deeply to be one") from exc
    except ValueError as exc:  # not JSON, or an integer of more than 4300 digits
        raise _bad_record(path, f"it is not JSON: {exc}") from exc
    return _record_from(path, data)


def _bad_record(path: Path, why: str) -> InputError:
    return InputError(
        f"{path} is not a bridge record ({why})",
        fix="rewrite it: run `pdnotes config codex --bridge --base-url URL --model ID` again "
        "(or correct the value in the file)",
    )


def _record_from(path: Path, data: object) -> BridgeConfig:
    """`data` (the parsed record) as a BridgeConfig, every value checked for its kind."""
    if not isinstance(data, dict):
        raise _bad_record(path, f"a JSON {_kind(data)}, not an object")
    upstream = data.get("upstream")
    if not isinstance(upstream, str) or url_problem(upstream) is not None:
        raise _bad_record(path, '"upstream" must be an http:// or https:// URL with a valid port')
    host = data.get("host", DEFAULT_HOST)
    if not isinstance(host, str) or not host.strip():
        raise _bad_record(path, '"host" must be a host name or address')
    port = data.get("port", DEFAULT_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise _bad_record(path, '"port" must be a whole number from 0 to 65535')
    names = {}
    for key in ("upstream_key_env", "api_key_env"):
        name = data.get(key)
        if name is not None and not (isinstance(name, str) and looks_like_env_name(name)):
            # the value is not shown: it may be a key pasted in place of the name
            raise _bad_record(path, f'"{key}" must be the NAME of an environment variable or null')
        names[key] = name
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise _bad_record(path, '"model" must be a string or null')
    mapping = data.get("model_map", {})
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise _bad_record(path, '"model_map" must be an object of model id to model id')
    fallbacks = _fallbacks_from(path, data.get("fallbacks", []))
    return BridgeConfig(
        upstream=upstream,
        upstream_key_env=names["upstream_key_env"],
        host=host,
        port=port,
        model_map=dict(mapping),
        api_key_env=names["api_key_env"],
        model=model,
        fallbacks=fallbacks,
    )


def _fallbacks_from(path: Path, data: object) -> tuple[Fallback, ...]:
    """The record's `"fallbacks"`: a list of {"upstream": URL, "upstream_key_env": NAME|null}."""
    shape = '"fallbacks" must be a list of {"upstream": URL, "upstream_key_env": NAME or null}'
    if not isinstance(data, list) or len(data) > MAX_UPSTREAMS - 1:
        raise _bad_record(path, f"{shape}, at most {MAX_UPSTREAMS - 1} of them")
    out = []
    for entry in data:
        if not isinstance(entry, dict):
            raise _bad_record(path, shape)
        url = entry.get("upstream")
        if not isinstance(url, str) or url_problem(url) is not None:
            raise _bad_record(path, shape)
        name = entry.get("upstream_key_env")
        if name is not None and not (isinstance(name, str) and looks_like_env_name(name)):
            raise _bad_record(path, shape)  # (not shown: it may be a key pasted in place)
        out.append(Fallback(url, name))
    return tuple(out)


def _kind(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def save_record(config: BridgeConfig) -> Path:
    """Write the record (only names of variables; no secret can be in it)."""
    text = json.dumps(config.to_json(), indent=2, sort_keys=True) + "\n"
    return fileio.atomic_write(record_path(), text)


def save_record_undoably(config: BridgeConfig) -> Callable[[], None]:
    """Write the record; return what puts the file back as it was (removes it if it was not
    there). What is there is read first, so a record that cannot be read or replaced (a
    folder, say) fails before anything is written."""
    path = record_path()
    previous = fileio.read_bytes(path)
    save_record(config)

    def undo() -> None:
        if previous is None:
            fileio.remove_file(path)
        else:
            fileio.atomic_write(path, previous)

    return undo


def new_record(
    *,
    upstream: str,
    upstream_key_env: str | None,
    port: int,
    api_key_env: str | None,
    model: str | None,
    fallbacks: Sequence[Fallback] | None = None,
) -> BridgeConfig:
    """What `pdnotes config --bridge` records (the variables need not be set yet). A model
    map and fallbacks recorded earlier for the same upstream are kept unless `fallbacks` is
    given (then it replaces them)."""
    url = _clean_upstream(upstream, flag="--base-url")
    try:
        previous = load_record()
    except InputError:
        previous = None
    same = previous is not None and previous.upstream == url
    mapping = previous.model_map if previous and same else {}
    if fallbacks is None:
        fallbacks = previous.fallbacks if previous and same else ()
    return BridgeConfig(
        upstream=url,
        upstream_key_env=upstream_key_env,
        port=port,
        model_map=dict(mapping),
        api_key_env=api_key_env,
        model=model,
        fallbacks=_checked_fallbacks(url, fallbacks, flag="--bridge-fallback"),
    )


def pair_upstreams(
    urls: Sequence[str], key_envs: Sequence[str], *, url_flag: str, key_flag: str
) -> list[Fallback]:
    """Repeated `url_flag` / `key_flag` flags as upstreams: the Nth key variable is the Nth
    URL's (`-`: that one has no key); URLs past the last key variable have no key (a key is
    never sent to an upstream it was not named for). More key variables than URLs is a usage
    error."""
    if len(key_envs) > len(urls):
        raise UsageError(
            f"{len(key_envs)} {key_flag} for {len(urls)} {url_flag}",
            fix=f"give each {url_flag} at most one {key_flag}, in the same order (the Nth "
            f"{key_flag} is the Nth {url_flag}'s key)",
        )
    names: list[str | None] = [None if name == "-" else name for name in key_envs]
    for name in names:
        check_env_name(key_flag, name)
    names += [None] * (len(urls) - len(names))
    return [Fallback(url, name) for url, name in zip(urls, names, strict=True)]


def _checked_fallbacks(
    first: str, fallbacks: Sequence[Fallback], *, flag: str = "--upstream"
) -> tuple[Fallback, ...]:
    """Fallbacks cleaned like the first upstream; a repeat of one before it is refused (it
    would be tried twice in one request)."""
    seen = [first]
    out = []
    for fallback in fallbacks:
        url = _clean_upstream(fallback.upstream, flag=flag)
        if url in seen:
            raise UsageError(
                f"the upstream {url} is given twice",
                fix="name each upstream once, in the order they should be tried",
            )
        seen.append(url)
        out.append(Fallback(url, fallback.upstream_key_env))
    if len(seen) > MAX_UPSTREAMS:
        raise UsageError(
            f"{len(seen)} upstreams; the bridge tries at most {MAX_UPSTREAMS}",
            fix="keep the first and up to seven fallbacks",
        )
    return tuple(out)


def resolve(
    *,
    upstream: Sequence[str] | str | None,
    upstream_key_env: Sequence[str] | str | None,
    host: str | None,
    port: int | None,
    model_map: list[str],
    api_key_env: str | None,
) -> BridgeConfig:
    """Flags over the record; no upstream anywhere is a usage error saying how to get one.
    `--upstream` repeated gives the upstreams in order (the first, then its fallbacks) and
    replaces the record's list; `--upstream-key-env` repeated pairs with them by position. An
    upstream given without a key variable takes the one the record has for the same URL."""
    urls = [upstream] if isinstance(upstream, str) else list(upstream or [])
    key_envs = [upstream_key_env] if isinstance(upstream_key_env, str) else []
    if not isinstance(upstream_key_env, str):
        key_envs = list(upstream_key_env or [])
    record = load_record()
    if not urls and record is None:
        raise UsageError(
            "no upstream to bridge to",
            fix="pass --upstream https://host/v1 (the URL before /chat/completions), or record "
            "one with `pdnotes config codex --bridge --base-url URL --model ID`",
        )
    base = record or BridgeConfig(upstream=urls[0])
    if urls and record is not None and _clean_upstream(urls[0]) != record.upstream:
        base = BridgeConfig(upstream=urls[0])  # another upstream: the record's extras don't apply
    check_env_name("--api-key-env", api_key_env)
    if urls:
        given = pair_upstreams(urls, key_envs, url_flag="--upstream", key_flag="--upstream-key-env")
        known = {u.upstream: u.upstream_key_env for u in base.upstreams}
        chosen = [
            Fallback(
                _clean_upstream(u.upstream),
                u.upstream_key_env or known.get(_clean_upstream(u.upstream)),
            )
            for u in given
        ]
    else:
        chosen = base.upstreams
        for i, key_env in enumerate(key_envs[: len(chosen)]):
            check_env_name("--upstream-key-env", key_env)
            chosen[i] = replace(chosen[i], upstream_key_env=key_env)
        if len(key_envs) > len(chosen):
            pair_upstreams(
                [u.upstream for u in chosen],
                key_envs,
                url_flag="recorded upstream",
                key_flag="--upstream-key-env",
            )
    first = _clean_upstream(chosen[0].upstream)
    mapping = {**base.model_map, **parse_model_map(model_map)}
    config = replace(
        base,
        upstream=first,
        upstream_key_env=chosen[0].upstream_key_env,
        host=host or base.host,
        port=base.port if port is None else port,
        model_map=mapping,
        api_key_env=api_key_env or base.api_key_env,
        fallbacks=_checked_fallbacks(first, chosen[1:]),
    )
    checks: list[tuple[str, str | None]] = [
        ("--upstream-key-env", u.upstream_key_env) for u in config.upstreams
    ]
    for flag, name in [*checks, ("--api-key-env", config.api_key_env)]:
        if name and not os.environ.get(name):
            raise UsageError(
                f"{flag} names {name}, which is unset or empty",
                fix=f"export {name}=<the key> and run the command again",
            )
        where = unsendable(os.environ.get(name, "")) if name else None
        if where is not None:  # every request would fail (or crash) with it
            raise UsageError(
                f"${name} ({flag}) has a character an HTTP header cannot carry ({where})",
                fix=f"export {name} again with the key alone (a quote, a space or a line end "
                "pasted with it?)",
            )
    return config


def _clean_upstream(url: str, *, flag: str = "--upstream") -> str:
    """The API root: a pasted `/chat/completions` is dropped; the scheme is required."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise UsageError(
            f"{flag} {url!r} has no http:// or https://",
            fix="write the upstream with its scheme, e.g. http://127.0.0.1:23333/v1",
        )
    require_url(url, flag=flag)
    # the URL is printed and recorded in bridge.json: a key in it would be too
    refuse_credentials(
        url,
        fix="keep the key in an environment variable and name it: `bridge serve "
        "--upstream-key-env NAME`, `config codex --bridge --env-key NAME` or `config claude "
        "--bridge --token-env NAME`",
    )
    for suffix in ("/chat/completions", "/responses", "/v1/messages", "/messages"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url
