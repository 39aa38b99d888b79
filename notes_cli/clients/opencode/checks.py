"""Static checks of OpenCode's configuration (`doctor --client opencode`): the layers it reads
(`clients.opencode.config`), each parsed as OpenCode parses it, and the misconfigurations that
make `opencode run` fail, most of them with nothing more than "Unexpected server error":

- a file that is not valid JSONC (OpenCode refuses to start: "Configuration is invalid");
- `model` not in "provider/model" form, naming a provider the `provider` block does not define,
  or a model the provider's `models` does not list;
- a model `limit` with `context` but no `output` (or the reverse): OpenCode rejects the file;
- `{env:NAME}` naming an unset variable, which OpenCode silently replaces with "" (an empty key);
- an adapter (`npm`) that speaks another API than the gateway: `@ai-sdk/openai` calls
  /responses, which most OpenAI-compatible gateways do not serve;
- the base URL problems every client shares (`url_checks`), plus a doubled /v1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notes_cli import fileio
from notes_cli.clients import urls
from notes_cli.clients.files import line_of
from notes_cli.clients.opencode import config as oc
from notes_cli.doctor.findings import Finding
from notes_cli.doctor.registry import make
from notes_cli.doctor.url_checks import check_base_url, check_model
from notes_cli.errors import ConfigParseError, InputError

BUILTIN_PROVIDERS = frozenset(
    {"opencode", "openai", "anthropic", "google", "openrouter", "github-copilot", "groq",
     "deepseek", "xai", "mistral", "amazon-bedrock", "azure", "vercel", "zai", "moonshotai"}
)  # fmt: skip
"""Provider ids OpenCode knows without a `provider` entry (from models.dev); a `model` naming
one of them is not pdnotes' to judge."""
_OPENAI_HOST = "api.openai.com"


@dataclass(frozen=True)
class Reading:
    """OpenCode's layers as doctor read them: the ones that parsed, and a finding for each
    that did not (OpenCode would refuse to start on it)."""

    layers: list[oc.Layer]
    problems: list[Finding]


def read(config_dir: Path | None, project_dir: Path | None, env: Mapping[str, str]) -> Reading:

    layers: list[oc.Layer] = []
    problems: list[Finding] = []
    seen: set[Path] = set()
    for label, path in oc.layer_sources(config_dir, project_dir, env):
        where = str(path) if path is not None else label
        try:
            if path is None:
                text: str | None = env["OPENCODE_CONFIG_CONTENT"]
            elif path.absolute() in seen:
                continue
            else:
                seen.add(path.absolute())
                text = fileio.read_text(path)
            if text is not None:
                data = oc.parse(text, Path(where))
                layers.append(oc.Layer(where, path, text, data))
        except ConfigParseError as exc:
            problems.append(
                make(
                    "opencode-config-syntax",
                    "opencode",
                    f"{exc.message}; OpenCode refuses to start (Configuration is invalid)",
                    file=where,
                    line=exc.line,
                    column=exc.column,
                )
            )
        except InputError as exc:
            detail = exc.fix or fileio.aside_fix(Path(where), "fix or remove the file")
            problems.append(
                make("file-unreadable", "opencode", exc.message, file=where, detail=detail)
            )
    return Reading(layers, problems)


def check_opencode(layers: list[oc.Layer], env: Mapping[str, str]) -> list[Finding]:
    if not layers:
        return []
    merged = oc.merge(layers)
    providers = _obj(merged.get("provider"))
    found = _env_refs(layers, env, _selected(merged))
    found += _literal_keys(layers)
    found += _model(layers, merged, providers)
    for provider_id, entry in providers.items():
        if isinstance(entry, dict):
            found += _provider(layers, str(provider_id), entry, env)
    return found


_HOW = (
    'export the key (export GW_API_KEY=…) and write "apiKey": "{env:GW_API_KEY}" '
    "(pdnotes config opencode --key-env GW_API_KEY does); then rotate the key, it sat in a file"
)


def _literal_keys(layers: list[oc.Layer]) -> list[Finding]:
    """A literal `apiKey` in a file (an error when git tracks the file: committing it
    publishes the key)."""
    from notes_cli.clients.git import tracked_by_git

    found: list[Finding] = []
    for layer in layers:
        for provider_id, entry in _obj(layer.data.get("provider")).items():
            key = _obj(_obj(entry).get("options")).get("apiKey")
            if not isinstance(key, str) or not key or oc.ENV_REF.search(key):
                continue
            tracked = layer.path is not None and tracked_by_git(layer.path)
            found.append(
                make(
                    "key-in-file",
                    "opencode",
                    f"provider.{provider_id}.options.apiKey holds a literal key in "
                    + ("a file git tracks" if tracked else layer.where),
                    severity="error" if tracked else None,
                    file=layer.where,
                    line=line_of(layer.text, '"apiKey"'),
                    how=_HOW,
                )
            )
    return found


def _selected(merged: dict[str, Any]) -> str | None:
    model = merged.get("model")
    parts = oc.split_model(model) if isinstance(model, str) else None
    return parts[0] if parts else None


def _model(
    layers: list[oc.Layer], merged: dict[str, Any], providers: dict[str, Any]
) -> list[Finding]:
    model = merged.get("model")
    if not isinstance(model, str) or not model:
        return []
    file, line = _where(layers, ("model",), '"model"')
    parts = oc.split_model(model)
    if parts is None:
        custom = [p for p, e in providers.items() if isinstance(e, dict)]
        hint = f"{custom[0]}/{model}" if custom else f"<provider>/{model}"
        return [
            make(
                "opencode-model-format",
                "opencode",
                f'model "{model}" is not "provider/model"; OpenCode fails with "Unexpected '
                'server error"',
                file=file,
                line=line,
                suggested=hint,
            )
        ]
    provider_id, model_id = parts
    entry = providers.get(provider_id)
    if not isinstance(entry, dict):
        if provider_id in BUILTIN_PROVIDERS:
            return []
        return [
            make(
                "opencode-provider-undefined",
                "opencode",
                f'model "{model}" names provider "{provider_id}", which no `provider` entry '
                'defines; OpenCode fails with "Unexpected server error"',
                file=file,
                line=line,
                provider=provider_id,
                model=model_id,
            )
        ]
    models = entry.get("models")
    if isinstance(models, dict) and model_id in models:
        return []
    listed = ", ".join(sorted(str(m) for m in models)) if isinstance(models, dict) else ""
    return [
        make(
            "opencode-model-undefined",
            "opencode",
            f'model "{model_id}" is not in provider.{provider_id}.models'
            + (f" ({listed})" if listed else " (it lists none)")
            + '; OpenCode fails with "Unexpected server error"',
            file=file,
            line=line,
            provider=provider_id,
            model=model_id,
        )
    ]


def _provider(
    layers: list[oc.Layer], provider_id: str, entry: dict[str, Any], env: Mapping[str, str]
) -> list[Finding]:
    found: list[Finding] = []
    options = _obj(entry.get("options"))
    base = options.get("baseURL")
    npm = entry.get("npm")
    if isinstance(base, str) and base:
        url = oc.substitute(base, env)
        file, line = _where(layers, ("provider", provider_id, "options", "baseURL"), '"baseURL"')
        found += check_base_url("opencode", url, file=file, line=line)
        found += _doubled_v1(url, file, line)
        if npm == "@ai-sdk/openai" and urls.hostname_of(url) not in (_OPENAI_HOST, None):
            file, line = _where(layers, ("provider", provider_id, "npm"), '"npm"')
            found.append(
                make(
                    "opencode-adapter-mismatch",
                    "opencode",
                    f"provider.{provider_id} uses @ai-sdk/openai, which calls {url}/responses "
                    "(the Responses API); an OpenAI-compatible gateway serves /chat/completions",
                    file=file,
                    line=line,
                    provider=provider_id,
                )
            )
    models = _obj(entry.get("models"))
    for model_id, model in models.items():
        limit = model.get("limit") if isinstance(model, dict) else None
        if not isinstance(limit, dict):
            continue
        missing = [k for k in ("context", "output") if k not in limit]
        if missing:
            keys = ("provider", provider_id, "models", str(model_id), "limit")
            file, line = _where(layers, keys, '"limit"')
            found.append(
                make(
                    "opencode-limit-incomplete",
                    "opencode",
                    f"provider.{provider_id}.models.{model_id}.limit has no "
                    f"{' or '.join(missing)}; OpenCode refuses the whole file (Missing key)",
                    file=file,
                    line=line,
                    missing=missing[0],
                )
            )
    selected_model = _selected_model(layers)
    if provider_id == (selected_model or ("", ""))[0] and isinstance(base, str):
        found += check_model(
            "opencode", selected_model[1] if selected_model else None, base, file=None, line=None
        )
    return found


def _selected_model(layers: list[oc.Layer]) -> tuple[str, str] | None:
    model = oc.merge(layers).get("model")
    return oc.split_model(model) if isinstance(model, str) else None


def _doubled_v1(url: str, file: str | None, line: int | None) -> list[Finding]:
    path = urls.path_of(url).rstrip("/")
    if "/v1/v1" not in path + "/":
        return []
    fixed = url.replace("/v1/v1", "/v1", 1)
    return [
        make(
            "base-url-v1-suffix",
            "opencode",
            f"base URL {url} holds /v1 twice: OpenCode calls {url}/chat/completions",
            file=file,
            line=line,
            suggested=fixed,
        )
    ]


def _env_refs(
    layers: list[oc.Layer], env: Mapping[str, str], selected: str | None
) -> list[Finding]:
    """`{env:NAME}` with NAME unset: OpenCode puts an empty string there, no error. An error
    in the selected provider's block, a warning elsewhere."""
    found: list[Finding] = []
    reported: set[str] = set()
    for layer in layers:
        for number, text in enumerate(layer.text.splitlines(), start=1):
            for name in oc.ENV_REF.findall(text):
                if env.get(name) or name in reported:
                    continue
                reported.add(name)
                in_selected = selected is not None and _inside_provider(layer, selected, name)
                found.append(
                    make(
                        "opencode-env-unset",
                        "opencode",
                        f"{{env:{name}}} names ${name}, which is not set: OpenCode puts an empty "
                        "string there and says nothing"
                        + (f" (provider {selected}'s key or URL)" if in_selected else ""),
                        severity="error" if in_selected else "warning",
                        file=layer.where,
                        line=number,
                        name=name,
                    )
                )
    return found


def _inside_provider(layer: oc.Layer, provider_id: str, name: str) -> bool:
    providers = layer.data.get("provider")
    entry = providers.get(provider_id) if isinstance(providers, dict) else None
    return isinstance(entry, dict) and f"{{env:{name}}}" in repr(entry)


def _where(
    layers: list[oc.Layer], keys: tuple[str, ...], needle: str
) -> tuple[str | None, int | None]:
    """The file that sets `keys` (the last layer), and the line of `needle` in it (best
    effort: the first line holding it)."""
    for layer in reversed(layers):
        value: Any = layer.data
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return layer.where, line_of(layer.text, needle)
    return None, None


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
