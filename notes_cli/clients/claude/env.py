"""Claude Code's model and limit variables, as it reads them after merging the shell with the
settings files' `env` blocks: each one's type, and the conflicts between them.

What each changes (Claude Code's env-vars and model-configuration docs):
    CLAUDE_CODE_SUBAGENT_MODEL      the model subagents (the Task tool) call
    ANTHROPIC_DEFAULT_HAIKU_MODEL   the Haiku-class model for background work (titles, summaries)
    ANTHROPIC_SMALL_FAST_MODEL      the same, under its deprecated name
    CLAUDE_CODE_MAX_OUTPUT_TOKENS   `max_tokens` of most requests
    CLAUDE_CODE_MAX_CONTEXT_TOKENS  the context window of a model Claude Code does not know
                                    (without it: 200k, or 1m from 2.1.3xx, with a warning)
    MAX_THINKING_TOKENS             the extended-thinking budget (0: no thinking)
    NODE_EXTRA_CA_CERTS             a PEM file of CA certificates Node trusts besides its own
A model variable names a model the gateway must serve, like ANTHROPIC_MODEL: a gateway that
serves one model answers Claude Code's background and subagent calls with 404 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from notes_cli.clients.claude.setup import ClaudeLayers
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_model

_MODELS = (
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
)
# name -> least value
_COUNTS = {
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": 1,
    "CLAUDE_CODE_MAX_CONTEXT_TOKENS": 1,
    "MAX_THINKING_TOKENS": 0,
}
_WINDOW = "CLAUDE_CODE_MAX_CONTEXT_TOKENS"
# Model names Claude Code knows without an id: its aliases (a `[1m]` suffix asks the 1M window).
_ALIASES = frozenset({"default", "best", "opus", "sonnet", "haiku", "opusplan"})
_PEM_MARK = b"-----BEGIN CERTIFICATE-----"
_PEM_READ = 1 << 20  # a CA bundle is well under this; the mark is looked for in it

Located = Callable[[str, str], tuple[str | None, int | None]]
"""(variable, source) -> (file, line) of where the variable is set (no file: the shell)."""


def check_claude_env(layers: ClaudeLayers, where: Located, base_url: str) -> list[Finding]:
    values = {
        k: v for k, v in layers.env.items() if k in (*_MODELS, *_COUNTS, "NODE_EXTRA_CA_CERTS")
    }
    found: list[Finding] = []
    counts: dict[str, int] = {}
    for name, (value, source) in values.items():
        file, line = where(name, source)
        text = str(value).strip()
        if name in _COUNTS:
            least = _COUNTS[name]
            number = int(text) if text.isdigit() else None
            if number is None or number < least:
                expected = "a whole number" + (" of at least 1" if least else " (0 or more)")
                found.append(_invalid(name, value, expected, source, file, line))
            else:
                counts[name] = number
        elif name in _MODELS and not text:
            expected = "a model id the gateway serves"
            found.append(_invalid(name, value, expected, source, file, line))
        elif name in _MODELS:  # a placeholder, or an id a preset's gateway does not serve
            for problem in check_model("claude", text, base_url, file=file, line=line):
                found.append(replace(problem, message=f"{name}: {problem.message}"))
    found += _deprecated(values, where)
    found += _thinking_budget(counts, values, where)
    if "NODE_EXTRA_CA_CERTS" in values:
        found += _ca_file(*values["NODE_EXTRA_CA_CERTS"], where)
    return found


def _invalid(
    name: str, value: object, expected: str, source: str, file: str | None, line: int | None
) -> Finding:
    return make(
        "claude-env-invalid",
        "claude",
        f"{name}={value!r} (from {source}) is not {expected}; Claude Code ignores it and uses "
        "its default",
        file=file,
        line=line,
        name=name,
        expected=expected,
    )


def _deprecated(values: Mapping[str, tuple[object, str]], where: Located) -> list[Finding]:
    if "ANTHROPIC_SMALL_FAST_MODEL" not in values:
        return []
    old, source = values["ANTHROPIC_SMALL_FAST_MODEL"]
    file, line = where("ANTHROPIC_SMALL_FAST_MODEL", source)
    new = values.get("ANTHROPIC_DEFAULT_HAIKU_MODEL")
    if new is None:
        message = (
            f"ANTHROPIC_SMALL_FAST_MODEL={old} (from {source}) is deprecated: "
            "ANTHROPIC_DEFAULT_HAIKU_MODEL names the background model now"
        )
        return [make("claude-env-deprecated", "claude", message, file=file, line=line, value=old)]
    if str(new[0]) == str(old):
        message = (
            "ANTHROPIC_SMALL_FAST_MODEL repeats ANTHROPIC_DEFAULT_HAIKU_MODEL under its old name"
        )
        return [make("claude-env-deprecated", "claude", message, file=file, line=line, value=old)]
    message = (
        f"ANTHROPIC_SMALL_FAST_MODEL={old} (from {source}) and "
        f"ANTHROPIC_DEFAULT_HAIKU_MODEL={new[0]} (from {new[1]}) disagree on the background model"
    )
    return [
        make(
            "claude-env-deprecated",
            "claude",
            message,
            variant="conflict",
            severity="warning",
            file=file,
            line=line,
            value=new[0],
        )
    ]


def _thinking_budget(
    counts: Mapping[str, int], values: Mapping[str, tuple[object, str]], where: Located
) -> list[Finding]:
    """The Messages API refuses a thinking budget that is not below `max_tokens` (400)."""
    budget, limit = counts.get("MAX_THINKING_TOKENS"), counts.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS")
    if budget is None or limit is None or budget == 0 or budget < limit:
        return []
    file, line = where("MAX_THINKING_TOKENS", values["MAX_THINKING_TOKENS"][1])
    return [
        make(
            "thinking-budget-over-output",
            "claude",
            f"MAX_THINKING_TOKENS={budget} is not below CLAUDE_CODE_MAX_OUTPUT_TOKENS={limit}: "
            "a thinking turn asks for a budget the API refuses (budget_tokens must be less than "
            "max_tokens)",
            file=file,
            line=line,
            limit=limit,
            suggestion=max(limit // 2, 1024) if limit > 2048 else limit - 1,
        )
    ]


def _ca_file(value: object, source: str, where: Located) -> list[Finding]:
    """Node warns once on stderr and goes on without the file, so a private CA then fails as
    `self-signed certificate in certificate chain` on every request."""
    path = Path(str(value)).expanduser()
    file, line = where("NODE_EXTRA_CA_CERTS", source)
    problem = None
    if not str(value).strip():
        problem = "is empty"
    elif not path.is_absolute() and file is not None:
        problem = "is a relative path, read from whatever folder Claude Code starts in"
    elif not path.exists():
        problem = "names no file"
    elif not path.is_file():
        problem = "names a folder, not a file"
    else:
        try:
            with path.open("rb") as handle:
                head = handle.read(_PEM_READ)
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        else:
            if _PEM_MARK not in head:
                problem = "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
    if problem is None:
        return []
    return [
        make(
            "ca-file-unusable",
            "claude",
            f"NODE_EXTRA_CA_CERTS={value} (from {source}) {problem}",
            file=file,
            line=line,
        )
    ]


def check_claude_window(
    layers: ClaudeLayers, model: str | None, model_source: str, where: Located
) -> list[Finding]:
    """A model Claude Code does not know, with no window variable: it assumes a window (1m
    tokens in 2.1.332, which warns `[claude-code:unrecognized_model]` on every start) that a
    gateway's model does not have, so it compacts too late."""
    if not model or _known_to_claude(model):
        return []
    value, _source = layers.env.get(_WINDOW, ("", ""))
    if str(value).strip():
        return []  # set (an invalid value is claude-env-invalid's)
    file, line = where("ANTHROPIC_MODEL", model_source)
    return [
        make(
            "claude-context-window-unknown",
            "claude",
            f'Claude Code does not know the model "{model}" (from {model_source or "default"}) '
            f"and {_WINDOW} is not set: it assumes a context window the model does not have "
            "(Claude Code 2.1.332: \"doesn't recognize the model …, so it assumes a context "
            'window of 1m tokens") and compacts too late',
            file=file,
            line=line,
            model=model,
            settings=file or "~/.claude/settings.json",
        )
    ]


def _known_to_claude(model: str) -> bool:
    name = model.strip().lower().removesuffix("[1m]")
    return name in _ALIASES or "claude" in name
