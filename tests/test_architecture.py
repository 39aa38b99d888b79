"""The house keeps its shape: no import circle among notes_cli modules, and imports run down the
layers of docs/architecture.md ("Layers"), each exception named below with its reason.

Imports are read from the source (ast), every one of them: top-level, lazy inside a function,
and type-only under `if TYPE_CHECKING:`. A type-only import never runs, so it cannot close an
import circle and is left out of the circle check; it is still a dependency, so the layer check
counts it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "notes_cli"

# docs/architecture.md, "Layers": a module may import its own layer and the ones below.
LAYERS: dict[str, int] = {
    **dict.fromkeys(["__main__", "cli", "render"], 3),
    **dict.fromkeys(
        ["demo", "doctor", "smoke", "notes", "bench", "plan", "bridge", "engine", "trace"], 2
    ),
    **dict.fromkeys(["clients", "gateway", "wire"], 1),
    **dict.fromkeys(["fileio", "backups", "secrets", "paths", "proxy", "resources", "errors"], 0),
}

# Existing imports against the layers or MUST_NOT, each kept on purpose (importer, imported).
KEPT_IMPORTS: dict[tuple[str, str], str] = {
    (
        "notes_cli.bridge.server",
        "notes_cli.render.log",
    ): "the bridge's log lines go to the terminal, and render/ owns the terminal",
    (
        "notes_cli.doctor.registry",
        "notes_cli.render",
    ): "only under `if __name__ == '__main__'`: prints the findings page for docs",
}

# What some packages' docstrings say they must not import, beyond the layers: importer prefix →
# forbidden prefixes; its exceptions are in KEPT_IMPORTS too.
MUST_NOT: dict[str, tuple[str, ...]] = {
    "notes_cli.wire": ("notes_cli.clients", "notes_cli.gateway"),
    "notes_cli.clients": ("notes_cli.gateway", "notes_cli.wire"),
    "notes_cli.bench": ("notes_cli.engine", "notes_cli.plan"),
    "notes_cli.engine": ("notes_cli.plan", "notes_cli.gateway"),
    "notes_cli.engine.core": tuple(
        f"notes_cli.{name}"
        for name in ("demo", "doctor", "smoke", "notes", "bench", "plan", "bridge", "trace")
    )
    + ("notes_cli.engine.live", "notes_cli.engine.http", "notes_cli.engine.simulate"),
    "notes_cli.engine.live": ("notes_cli.engine.http", "notes_cli.engine.simulate"),
    "notes_cli.engine.simulate": ("notes_cli.engine.http", "notes_cli.engine.live"),
    "notes_cli.engine.http": ("notes_cli.engine.simulate",),
    # the trace format is read by the simulator, planner and bridge, never the other way round
    "notes_cli.trace": ("notes_cli.engine", "notes_cli.plan", "notes_cli.bridge"),
}

# Packages whose __init__.py docstring is still to be written, each with its reason.
NO_DOCSTRING_YET: dict[str, str] = {}

# Existing circles, each kept on purpose (its modules, sorted).
CIRCLES: dict[tuple[str, ...], str] = {
    (
        "notes_cli.render",
        "notes_cli.render._console",
    ): "render/ builds its rich console lazily from _console (rich loads only when drawing), "
    "and the console applies render.visible to every string",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _type_only_lines(tree: ast.Module) -> set[int]:
    """Line numbers of imports under `if TYPE_CHECKING:`."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines |= {n.lineno for n in ast.walk(inner) if hasattr(n, "lineno")}
    return lines


def _imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, bool]]:
    """(module of notes_cli imported, whether only for types) for every import in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            # `from pkg import module` names a module; `from module import name` the module.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target not in (name, "notes_cli"):
                yield target, node.lineno in type_only


def _graph() -> dict[str, set[tuple[str, bool]]]:
    modules = _modules()
    return {name: set(_imported(name, path, modules)) for name, path in modules.items()}


# clients/ is two layers (docs/architecture.md, "Clients"): its core (syntax, layers, write
# plans, endpoints) below doctor/bridge/smoke, and its clients (one folder each) with the
# Protocol, the registry and the setups built from it beside them, as the clients' checks make
# findings and the doctor, smoke and bridge iterate over the registry.
CLIENT_LAYER = 2
CLIENT_MODULES = (
    "notes_cli.clients.plugin",
    "notes_cli.clients.registry",
    "notes_cli.clients.setups",
)


def _client_folders() -> list[str]:
    """The clients in a folder of their own: the packages under notes_cli/clients/."""
    return sorted(p.parent.name for p in (PACKAGE / "clients").glob("*/__init__.py"))


def _layer(module: str) -> int | None:
    if module == "notes_cli":
        return 0
    parts = module.split(".")
    if parts[1] == "clients" and (
        module in CLIENT_MODULES or (len(parts) > 2 and parts[2] in _client_folders())
    ):
        return CLIENT_LAYER
    return LAYERS.get(parts[1])


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _breaks_a_rule(importer: str, imported: str) -> bool:
    if (_layer(importer) or 0) < (_layer(imported) or 0):
        return True
    return any(
        _within(importer, owner) and any(_within(imported, bad) for bad in forbidden)
        for owner, forbidden in MUST_NOT.items()
    )


def _circles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(tuple(sorted(component)))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[tuple[str, bool]]]:
    return _graph()


def test_every_top_level_module_has_a_layer(graph: dict[str, set[tuple[str, bool]]]) -> None:
    unplaced = sorted({m.split(".")[1] for m in graph if m != "notes_cli"} - LAYERS.keys())
    assert not unplaced, f"place {unplaced} in docs/architecture.md's layers and in LAYERS here"


def test_imports_run_down_the_layers(graph: dict[str, set[tuple[str, bool]]]) -> None:
    upward = sorted(
        (importer, imported)
        for importer, targets in graph.items()
        for imported, _ in targets
        if _breaks_a_rule(importer, imported)
    )
    unexplained = [arrow for arrow in upward if arrow not in KEPT_IMPORTS]
    assert not unexplained, (
        f"imports against the layers of docs/architecture.md or a package's rule: {unexplained}"
    )
    stale = sorted(set(KEPT_IMPORTS) - set(upward))
    assert not stale, f"these listed exceptions are gone; drop them from KEPT_IMPORTS: {stale}"


def test_no_import_circles(graph: dict[str, set[tuple[str, bool]]]) -> None:
    runtime = {m: {t for t, type_only in targets if not type_only} for m, targets in graph.items()}
    circles = sorted(_circles(runtime))
    new = [circle for circle in circles if circle not in CIRCLES]
    assert not new, f"import circles among notes_cli modules: {new}"
    stale = sorted(set(CIRCLES) - set(circles))
    assert not stale, f"these listed circles are gone; drop them from CIRCLES: {stale}"


def test_every_package_says_what_it_owns(graph: dict[str, set[tuple[str, bool]]]) -> None:
    silent = [
        str(init.relative_to(PACKAGE.parent))
        for init in sorted(PACKAGE.rglob("__init__.py"))
        if not ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        and str(init.relative_to(PACKAGE.parent)) not in NO_DOCSTRING_YET
    ]
    assert not silent, f"packages without a docstring in __init__.py: {silent}"


# -- a client is one folder (issue 38) ------------------------------------------------------------


def _identifiers(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, identifier) of every name the code uses or defines, and every module it imports."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            yield line, node.id
        elif isinstance(node, ast.Attribute):
            yield line, node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield line, node.name
        elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
            yield line, node.arg
        elif isinstance(node, ast.alias):
            yield line, node.name
            if node.asname:
                yield line, node.asname
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, node.module


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _names(identifier: str, client: str) -> bool:
    """Whether the identifier's words (snake_case, CamelCase and dotted parts) hold the client's
    name as a run of whole words: `plan_opencode`, `OpenCodeOptions`, `PiConfig`, but not
    `typing` or `api` for Pi."""
    words = [w.lower() for w in _WORD.findall(identifier)]
    return any(
        "".join(words[i:j]) == client
        for i in range(len(words))
        for j in range(i + 1, len(words) + 1)
    )


def client_mentions(source: str, client: str) -> list[str]:
    """Where `source` knows `client` by name: an identifier or imported module containing the
    name (`plan_opencode`, `OpenCodeOptions`, `notes_cli.clients.opencode`), or a string that
    IS the name (`client == "opencode"`, a dict keyed by it, a Literal of it). Prose that
    merely mentions the client (help text, messages, docstrings) is not a mention: it is the
    client's documentation, as are the docs."""
    tree = ast.parse(source)
    found = [f"line {line}: {name}" for line, name in _identifiers(tree) if _names(name, client)]
    protocol_words = _compared_with_a_protocol(tree)
    found += [
        f"line {node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.strip().lower() == client
        and id(node) not in protocol_words
    ]
    return found


def _compared_with_a_protocol(tree: ast.AST) -> set[int]:
    """The string constants a comparison holds against a wire protocol's name
    (`endpoint.protocol == "gemini"`, `protocol not in ("chat", "gemini")`): the word names
    the protocol there (the Gemini API), not the client."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(
            isinstance(side, ast.Name)
            and side.id == "protocol"
            or isinstance(side, ast.Attribute)
            and side.attr == "protocol"
            for side in sides
        ):
            continue
        found |= {id(c) for side in sides for c in ast.walk(side) if isinstance(c, ast.Constant)}
    return found


# Where a client's name is also a wire protocol's (the Gemini API: Google's generateContent), by
# module, with why: None for a module that is that protocol throughout (wire/ is, whole), else
# the exact words that name the protocol there; any other mention of the client still fails.
PROTOCOL_MODULES: dict[str, tuple[str, frozenset[str] | None]] = {
    "notes_cli/bridge/gemini_route.py": ("the bridge's Gemini API route", None),
    "notes_cli/engine/http/app.py": ("the engine's routes, the Gemini API's among them", None),
    "notes_cli/engine/http/dialects.py": ("the engine's dialect of each wire protocol", None),
    "notes_cli/bridge/app.py": ("routes the Gemini API to its module", frozenset({"gemini_route"})),
    "notes_cli/engine/http/server.py": (
        "the engine's Gemini API base URL", frozenset({"gemini_base_url"})
    ),
    "notes_cli/render/engine.py": (
        "shows the APIs the engine serves", frozenset({"gemini_base_url", "'gemini'"})
    ),
    "notes_cli/clients/endpoint.py": (
        "the protocols' names (`Protocol`) and model-list URLs", frozenset({"'gemini'"})
    ),
    "notes_cli/gateway/client.py": ("how each protocol's stream ends", frozenset({"'gemini'"})),
    "notes_cli/secrets.py": ("the Gemini API URL's method segment", frozenset({"_GEMINI_METHODS"})),
    "notes_cli/clients/presets.py": (
        "a preset's Gemini API root (its [gemini] table)",
        frozenset({"GeminiPreset", "gemini", "'gemini'"}),
    ),
    "notes_cli/render/config.py": ("`config presets --json` shows it", frozenset({"gemini"})),
    "notes_cli/cli/smoke.py": ("--client's help names each protocol", frozenset({"'gemini'"})),
}  # fmt: skip


def _outside(client: str) -> Iterator[tuple[Path, frozenset[str]]]:
    """Every module but the client's folder, the registry, wire/ and the modules that are a
    wire protocol named like a client, each with the words that name a protocol there
    (`PROTOCOL_MODULES`)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        if _within(name, f"notes_cli.clients.{client}") or _within(name, "notes_cli.wire"):
            continue
        _, words = PROTOCOL_MODULES.get(str(path.relative_to(PACKAGE.parent)), ("", frozenset()))
        if words is not None and name != "notes_cli.clients.registry":
            yield path, words


def _not_protocol(found: list[str], words: frozenset[str]) -> list[str]:
    return [mention for mention in found if mention.split(": ", 1)[1] not in words]


# Where a module picks one client by its name on purpose, by (module, client), with why and the
# exact words; it reaches the client through `clients.registry` (any other mention still fails).
CHOSEN_BY_NAME: dict[tuple[str, str], tuple[str, frozenset[str]]] = {
    ("notes_cli/demo/step.py", "codex"): (
        "the demo walks the article's example on Codex (its mistakes are config.toml mistakes): "
        "`demo.step.CLIENT` picks it, every step drives it through its Client",
        frozenset({"'codex'"}),
    ),
    ("notes_cli/demo/step.py", "claude"): (
        "the demo configures and checks the article's other client beside it, Claude Code on the "
        "engine's Anthropic root: `demo.step.ALSO` picks it, driven through its Client too",
        frozenset({"'claude'"}),
    ),
}


def _chosen(path: Path, client: str) -> frozenset[str]:
    _, words = CHOSEN_BY_NAME.get((str(path.relative_to(PACKAGE.parent)), client), ("", None))
    return words or frozenset()


@pytest.mark.parametrize("client", _client_folders())
def test_a_client_is_known_by_name_only_in_its_folder(client: str) -> None:
    mentions = {
        str(path.relative_to(PACKAGE.parent)): found
        for path, words in _outside(client)
        if (
            found := _not_protocol(
                client_mentions(path.read_text("utf-8"), client), words | _chosen(path, client)
            )
        )
    }
    assert not mentions, (
        f"{client} is named outside notes_cli/clients/{client}/ and the registry: ask "
        f"clients.registry for it instead: {mentions}"
    )


def test_the_name_rule_sees_a_branch_an_import_and_a_name_but_not_prose() -> None:
    planted = (
        "from notes_cli.clients.opencode import config\n"
        "def plan_opencode(x):\n"
        "    if x == 'opencode':\n"
        "        return config\n"
        "    return 'OpenCode reads opencode.json'\n"
    )
    assert [m.split(":")[0] for m in client_mentions(planted, "opencode")] == [
        "line 1", "line 2", "line 3",
    ]  # fmt: skip


def test_the_name_rule_reads_whole_words_so_a_short_name_is_not_in_every_word() -> None:
    """A client named like a syllable (Pi) is known by `PiConfig`, `plan_pi`, `clients.pi`,
    not by `typing`, `api` or `compile`."""
    planted = (
        "import typing\n"
        "from notes_cli.clients.pi import PiConfig\n"
        "def compile_api(api: typing.Any):\n"
        "    return plan_pi(api)\n"
    )
    assert [m.split(":")[0] for m in client_mentions(planted, "pi")] == [
        "line 2", "line 2", "line 4",
    ]  # fmt: skip


def test_the_name_rule_lets_a_protocol_carry_the_name_and_nothing_else() -> None:
    """A protocol value (`endpoint.protocol == "gemini"`) or a listed protocol word is allowed;
    a branch on the client in the same module is not."""
    protocol = 'if endpoint.protocol == "gemini" or protocol in ("chat", "gemini"):\n    pass\n'
    assert client_mentions(protocol, "gemini") == []
    branch = 'if client == "gemini":\n    pass\n'
    assert client_mentions(branch, "gemini") == ["line 1: 'gemini'"]
    source = (PACKAGE / "bridge" / "app.py").read_text("utf-8")
    _, words = PROTOCOL_MODULES["notes_cli/bridge/app.py"]
    assert words is not None and not _not_protocol(client_mentions(source, "gemini"), words)
    planted = source + "\n\ndef planted(client: str) -> bool:\n    return client == 'gemini'\n"
    assert _not_protocol(client_mentions(planted, "gemini"), words) == [
        f"line {planted.count(chr(10))}: 'gemini'"
    ]


def test_every_choice_by_name_is_still_needed_and_nothing_more() -> None:
    for (module, client), (_, words) in CHOSEN_BY_NAME.items():
        found = client_mentions((PACKAGE.parent / module).read_text("utf-8"), client)
        assert {mention.split(": ", 1)[1] for mention in found} == words, (module, found)


def test_every_protocol_allowance_is_still_needed() -> None:
    """Each module and word in `PROTOCOL_MODULES` still names the protocol (no stale leave)."""
    for module, (_, words) in PROTOCOL_MODULES.items():
        found = client_mentions((PACKAGE.parent / module).read_text("utf-8"), "gemini")
        used = {mention.split(": ", 1)[1] for mention in found}
        assert found and (words is None or words <= used), (module, words, used)


def test_every_client_folder_is_registered_and_ships() -> None:
    from notes_cli.clients import registry

    assert set(_client_folders()) == {c.name for c in registry.CLIENTS}


def test_findings_name_known_clients() -> None:
    import tomllib

    from notes_cli.clients import registry

    data = tomllib.loads((PACKAGE.parent / "templates/doctor/findings.toml").read_text("utf-8"))
    unknown = {f["client"] for f in data["finding"]} - {*registry.names(), "env", "any"}
    assert not unknown
