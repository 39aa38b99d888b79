"""Record (or check) the launch flags pdnotes' sketches use, read from the engines' own sources.

    python scripts/extract_launch_flags.py \\
        --lmdeploy /work/.mirror/InternLM+lmdeploy/repo \\
        --vllm vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl \\
        --sglang sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl \\
        --sglang-router sglang_router-0.3.2-cp38-abi3-manylinux_2_17_x86_64.whl \\
        --dlslime /work/.mirror/DeepLink-org+DLSlime/repo \\
        [--check]

Each SOURCE is a git directory (a bare mirror as `fetch` brings it, or a clone's .git; read at
HEAD), a source checkout, or a wheel (`pip download --no-deps NAME==VERSION`). The script
generates every sketch pdnotes can write for the shipped presets (in each mode, with eager
decode, a KV cap, Ascend chips and a TCP link too), collects the flags they use, finds each one
in the engine's argument definitions (parsed with `ast`, nothing imported or run), and writes
templates/launch/flags.toml with the engine's version and commit and, per flag, the file that
defines it, whether it takes a value, and its choices. A flag the source does not define is an
error. `--check` compares the recorded file with the sources instead of writing (exit 1 on a
difference). It needs the sources, so CI does not run it; tests/test_launch_sketch.py checks the
sketches against the recorded file.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from notes_cli.engine.core.profiles import Catalog, Deployment, load_catalog  # noqa: E402
from notes_cli.plan.launch import ENGINES, launch_sketch  # noqa: E402
from notes_cli.plan.launch_flags import is_flag  # noqa: E402

OUT = ROOT / "templates" / "launch" / "flags.toml"
_PREFIXES = ("", "python/", "sgl-router/py_src/", "sgl-model-gateway/bindings/python/")


class Source:
    """Read files of one engine from a git directory, a checkout or a wheel."""

    def __init__(self, location: Path) -> None:
        self.location = location
        self.kind = "wheel" if location.suffix == ".whl" else "git" if _is_git(location) else "tree"
        self._zip = zipfile.ZipFile(location) if self.kind == "wheel" else None

    def _raw(self, path: str) -> str | None:
        if self._zip is not None:
            try:
                return self._zip.read(path).decode()
            except KeyError:
                return None
        if self.kind == "git":
            run = subprocess.run(
                ["git", "--git-dir", str(self.location), "show", f"HEAD:{path}"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            return run.stdout if run.returncode == 0 else None
        file = self.location / path
        return file.read_text() if file.is_file() else None

    def read(self, path: str) -> tuple[str, str]:
        """(text, the path as found) of a package-relative path such as sglang/version.py."""
        for prefix in _PREFIXES:
            text = self._raw(prefix + path)
            if text is not None:
                return text, path
        raise SystemExit(f"{self.location}: no {path}")

    def listdir(self, folder: str) -> list[str]:
        if self._zip is not None:
            return sorted(n for n in self._zip.namelist() if n.startswith(folder))
        for prefix in _PREFIXES:
            if self.kind == "git":
                run = subprocess.run(
                    ["git", "--git-dir", str(self.location), "ls-tree", "-r", "--name-only",
                     "HEAD", prefix + folder],
                    capture_output=True, text=True, timeout=60,
                )  # fmt: skip
                names = run.stdout.split()
            else:
                names = [
                    str(p.relative_to(self.location))
                    for p in (self.location / (prefix + folder)).glob("*")
                ]
            if names:
                return sorted(n.removeprefix(prefix) for n in names)
        return []

    def commit(self) -> str:
        if self.kind == "git":
            run = subprocess.run(
                ["git", "--git-dir", str(self.location), "rev-parse", "HEAD"],
                capture_output=True, text=True, timeout=60, check=True,
            )  # fmt: skip
            return run.stdout.strip()
        return ""

    def describe(self) -> str:
        if self.kind == "git":
            run = subprocess.run(
                ["git", "--git-dir", str(self.location), "describe", "--tags"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            return run.stdout.strip()
        return self.location.name


def _is_git(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


# -- reading argument definitions ------------------------------------------------------------------


def _literal(node: ast.AST | None, names: dict[str, Any]) -> Any:
    if node is None:
        return None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _module_names(tree: ast.Module) -> dict[str, Any]:
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                value = _literal(node.value, names)
                if value is not None:
                    names[target.id] = value
    return names


def _option_strings(call: ast.Call) -> list[str]:
    names = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            names.append(arg.value)
        elif isinstance(arg, ast.JoinedStr):  # f"--{prefix}policy" with prefix ""
            names.append("".join(v.value for v in arg.values if isinstance(v, ast.Constant)))
    return [n for n in names if n.startswith("-")]


_SWITCH_ACTION = re.compile(r"store_true|store_false|StoreTrue|count|BooleanOptional")


def argparse_flags(
    node: ast.AST, file: str, names: dict[str, Any], field_types: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """flag -> {file, takes_value, choices?} for every add_argument(...) call under `node`.
    `field_types` (vLLM) gives the annotation of the field a `**kwargs["name"]` spread comes from:
    a bool field is a switch (with a --no- form), a Literal one has choices."""
    flags: dict[str, dict[str, Any]] = {}
    for call in ast.walk(node):
        if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"):
            continue
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        action = ast.unparse(keywords["action"]) if "action" in keywords else ""
        takes_value = not _SWITCH_ACTION.search(action)
        choices = _literal(keywords.get("choices"), names)
        negatable = False
        for spread in (k.value for k in call.keywords if k.arg is None):
            key = re.search(r"\[['\"](\w+)['\"]\]", ast.unparse(spread))
            annotation = (field_types or {}).get(key.group(1), "") if key else ""
            if re.search(r"\bbool\b", annotation):
                takes_value, negatable = False, True
            elif literal := re.search(r"Literal\[([^\]]+)\]", annotation):
                choices = ast.literal_eval(f"[{literal.group(1)}]")
        for name in _option_strings(call):
            flags[name] = {"file": file, "takes_value": takes_value}
            if isinstance(choices, list | tuple | set):
                flags[name]["choices"] = sorted(map(str, choices), key=str)
            if negatable and name.startswith("--"):
                flags["--no-" + name[2:]] = {"file": file, "takes_value": False}
    return flags


def _function(tree: ast.AST, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise SystemExit(f"no function {name}")


def _class(tree: ast.AST, name: str) -> ast.ClassDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise SystemExit(f"no class {name}")


def _annotations(cls: ast.ClassDef) -> dict[str, str]:
    return {
        n.target.id: ast.unparse(n.annotation)
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def _defaults(function: ast.FunctionDef) -> dict[str, Any]:
    """A function's literal parameter defaults, by parameter name."""
    params = function.args.args[len(function.args.args) - len(function.args.defaults) :]
    return {
        p.arg: value
        for p, d in zip(params, function.args.defaults, strict=True)
        if (value := _literal(d, {})) is not None
    }


def lmdeploy_flags(src: Source) -> dict[str, dict[str, dict[str, Any]]]:
    serve_text, serve_file = src.read("lmdeploy/cli/serve.py")
    utils_text, utils_file = src.read("lmdeploy/cli/utils.py")
    serve, utils = ast.parse(serve_text), ast.parse(utils_text)
    helper = _class(utils, "ArgumentHelper")
    commands = {}
    for command, function in (
        ("api_server", "add_parser_api_server"),
        ("proxy", "add_parser_proxy"),
    ):
        body = _function(serve, function)
        flags = argparse_flags(body, serve_file, _module_names(serve))
        for call in ast.walk(body):  # ArgumentHelper.tp(pt_group) -> utils.py's add_argument
            if isinstance(call, ast.Call) and ast.unparse(call.func).startswith("ArgumentHelper."):
                method = _function(helper, ast.unparse(call.func).split(".", 1)[1])
                names = {**_module_names(utils), **_defaults(method)}  # device(..., choices=[...])
                flags.update(argparse_flags(method, utils_file, names))
        commands[f"lmdeploy serve {command}"] = {"file": serve_file, "flags": flags}
    return commands


def vllm_flags(src: Source) -> tuple[dict[str, Any], dict[str, Any]]:
    args_text, args_file = src.read("vllm/engine/arg_utils.py")
    cli_text, cli_file = src.read("vllm/entrypoints/common/cli_args.py")
    args, cli = ast.parse(args_text), ast.parse(cli_text)
    fields = _annotations(_class(args, "EngineArgs"))
    flags = argparse_flags(args, args_file, _module_names(args), fields)
    flags.update(argparse_flags(_function(cli, "make_arg_parser"), cli_file, _module_names(cli)))
    for cls in ("BaseFrontendArgs", "FrontendArgs"):  # add_cli_args: f"--{key}" per field
        for name, annotation in _annotations(_class(cli, cls)).items():
            switch = re.search(r"\bbool\b", annotation) is not None
            flags["--" + name.replace("_", "-")] = {"file": cli_file, "takes_value": not switch}
    flags["--kv-transfer-config"]["json_keys"] = ["kv_connector", "kv_role"]
    factory_text, factory_file = src.read("vllm/distributed/kv_transfer/kv_connector/factory.py")
    connectors = sorted(
        call.args[0].value
        for call in ast.walk(ast.parse(factory_text))
        if isinstance(call, ast.Call)
        and getattr(call.func, "attr", "") == "register_connector"
        and call.args
        and isinstance(call.args[0], ast.Constant)
    )
    kv_text, kv_file = src.read("vllm/config/kv_transfer.py")
    roles = sorted(set(re.findall(r'"(kv_\w+)"', kv_text.split("KVRole")[0])))
    values = {
        "kv_connector": {"file": factory_file, "choices": connectors},
        "kv_role": {"file": kv_file, "choices": roles},
    }
    commands = {"vllm serve": {"file": "vllm/entrypoints/cli/serve.py", "flags": flags}}
    return commands, values


def sglang_flags(src: Source) -> dict[str, Any]:
    """ServerArgs' fields (sglang/srt/arg_groups/fields/*.py: `name: A[type, Arg(...)]` becomes
    --name, see arg_groups/arg_utils.py) plus the flags server_args.py registers by hand."""
    choices_text, _ = src.read("sglang/srt/arg_groups/choices.py")
    shared = _module_names(ast.parse(choices_text))
    flags: dict[str, dict[str, Any]] = {}
    for path in src.listdir("sglang/srt/arg_groups/fields/"):
        if not path.endswith(".py"):
            continue
        text, file = src.read(path)
        tree = ast.parse(text)
        names = {**shared, **_module_names(tree)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            annotation = node.annotation
            if not (isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "A"):
                continue
            parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
            meta: dict[str, ast.AST] = {}
            if len(parts) > 1 and isinstance(parts[1], ast.Call):
                meta = {k.arg: k.value for k in parts[1].keywords if k.arg}
            if _literal(meta.get("no_cli"), names):
                continue
            type_text = ast.unparse(parts[0]) if parts else ""
            name = _literal(meta.get("cli_name"), names) or "--" + node.target.id.replace("_", "-")
            spec: dict[str, Any] = {"file": file, "takes_value": type_text != "bool"}
            choices = _literal(meta.get("choices"), names)
            if choices is None and (literal := re.search(r"Literal\[([^\]]+)\]", type_text)):
                choices = ast.literal_eval(f"[{literal.group(1)}]")
            if isinstance(choices, list | tuple):
                spec["choices"] = [str(c) for c in choices]
            for option in [name, *(_literal(meta.get("aliases"), names) or [])]:
                flags[option] = spec
    text, file = src.read("sglang/srt/server_args.py")
    tree = ast.parse(text)
    flags.update(argparse_flags(_function(tree, "add_cli_args"), file, _module_names(tree)))
    return {"python -m sglang.launch_server": {"file": "sglang/launch_server.py", "flags": flags}}


def router_flags(src: Source) -> dict[str, Any]:
    text, file = src.read("sglang_router/router_args.py")
    flags = argparse_flags(ast.parse(text), file, _module_names(ast.parse(text)))
    return {
        "python -m sglang_router.launch_router": {
            "file": "sglang_router/launch_router.py",
            "flags": flags,
        }
    }


def _version(text: str) -> str:
    match = re.search(r"^__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)", text, re.M)
    if not match:
        raise SystemExit("no __version__")
    return match.group(1)


# -- what the sketches use -------------------------------------------------------------------------


def sketch_variants(catalog: Catalog) -> Iterator[Deployment]:
    """Every shipped preset in each mode it can run, plus the options a sketch writes flags for
    (eager decode, a KV cap), so the record covers every flag a sketch may write."""
    for dep in catalog.deployments.values():
        modes = (
            ["disagg", "colocated", "chunked"]
            if dep.prefill and dep.decode
            else [dep.mode, "chunked", "colocated"]
        )
        for mode in dict.fromkeys(modes):
            variant = dep.with_mode(mode)
            yield variant
            yield replace(variant, decode_exec="eager", kv_capacity_tokens=100_000)
            staged = [
                replace(g, pp=2) if g else g for g in (dep.prefill, dep.decode, dep.colocated)
            ]
            yield replace(dep, prefill=staged[0], decode=staged[1], colocated=staged[2]).with_mode(
                mode
            )


def used_flags(catalog: Catalog) -> dict[str, dict[str, set[str]]]:
    """engine -> command words -> flags, across every sketch variant."""
    commands = {
        "lmdeploy": ("lmdeploy serve api_server", "lmdeploy serve proxy"),
        "vllm": ("vllm serve",),
        "sglang": ("python -m sglang.launch_server", "python -m sglang_router.launch_router"),
    }
    used: dict[str, dict[str, set[str]]] = {e: {c: set() for c in commands[e]} for e in ENGINES}
    for dep in sketch_variants(catalog):
        for engine in ENGINES:
            for step in launch_sketch(dep, catalog, engine).steps:
                words = [w for w in step.argv if not re.match(r"[A-Z_]+=", w)]
                command = next(c for c in commands[engine] if " ".join(words).startswith(c))
                rest = words[len(command.split()) :]
                used[engine][command] |= {w.partition("=")[0] for w in rest if is_flag(w)}
    return used


def build(options: argparse.Namespace) -> dict[str, Any]:
    lmdeploy = Source(options.lmdeploy)
    vllm = Source(options.vllm)
    sglang = Source(options.sglang)
    router = Source(options.sglang_router)
    vllm_version_text, _ = vllm.read("vllm/_version.py")
    vllm_commit = re.search(r"commit_id\s*=\s*['\"]g?([0-9a-f]+)", vllm_version_text)
    vllm_commands, vllm_values = vllm_flags(vllm)
    router_version = _version(router.read("sglang_router/version.py")[0])
    engines: dict[str, Any] = {
        "lmdeploy": {
            "version": _version(lmdeploy.read("lmdeploy/version.py")[0]),
            "commit": lmdeploy.commit(),
            "source": f"github:InternLM/lmdeploy, fetched mirror ({lmdeploy.describe()})",
            "commands": lmdeploy_flags(lmdeploy),
        },
        "vllm": {
            "version": _version(vllm_version_text),
            "commit": vllm_commit.group(1) if vllm_commit else vllm.commit(),
            "source": f"{vllm.describe()} (PyPI; the GitHub snapshot is over fetch's size limit)",
            "commands": vllm_commands,
            "values": vllm_values,
        },
        "sglang": {
            "version": _version(sglang.read("sglang/_version.py")[0]),
            "commit": sglang.commit() or f"tag v{_version(sglang.read('sglang/_version.py')[0])} "
            "(the wheel records no commit)",
            "source": f"{sglang.describe()} and {router.describe()} (PyPI; the GitHub snapshot is "
            "over fetch's size limit)",
            "commands": {**sglang_flags(sglang), **{
                name: {**spec, "package": "sglang-router", "version": router_version}
                for name, spec in router_flags(router).items()
            }},
        },
    }  # fmt: skip
    used = used_flags(load_catalog(user=False))
    missing = []
    for engine, commands in used.items():
        for command, flags in commands.items():
            defined = engines[engine]["commands"][command]["flags"]
            missing += [f"{engine}: {command} {f}" for f in sorted(flags) if f not in defined]
            engines[engine]["commands"][command]["flags"] = {
                f: defined[f] for f in sorted(flags) if f in defined
            }
    if missing:
        raise SystemExit(
            "flags the sketches use that the sources do not define:\n  " + "\n  ".join(missing)
        )
    data: dict[str, Any] = {"engines": engines}
    if options.dlslime:
        dlslime = Source(options.dlslime)
        pyproject = tomllib.loads(dlslime.read("pyproject.toml")[0])
        data["migration_backends"] = {
            "dlslime": {
                "version": pyproject.get("project", {}).get("version", dlslime.describe()),
                "commit": dlslime.commit(),
                "source": f"github:DeepLink-org/DLSlime, fetched mirror ({dlslime.describe()}); "
                "no launch flags of its own: LMDeploy selects it with --migration-backend DLSlime",
            }
        }
    return data


def render(data: dict[str, Any]) -> str:
    import tomlkit

    doc = tomlkit.document()
    for line in (
        "Launch flags pdnotes' sketches use, read from each engine's own argument definitions.",
        "Written by scripts/extract_launch_flags.py (see its docstring); do not edit by hand.",
        "Per flag: the file defining it, whether it takes a value, and its choices.",
    ):
        doc.add(tomlkit.comment(line))
    doc.update(data)
    return tomlkit.dumps(doc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("lmdeploy", "vllm", "sglang", "sglang-router"):
        parser.add_argument(f"--{name}", type=Path, required=True, metavar="SOURCE")
    parser.add_argument("--dlslime", type=Path, metavar="SOURCE")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    options = parser.parse_args()
    text = render(build(options))
    if options.check:
        recorded = OUT.read_text() if OUT.exists() else ""
        if tomllib.loads(recorded or "x=1") != tomllib.loads(text):
            print(f"{OUT} differs from the sources; run without --check to rewrite it")
            return 1
        print(f"{OUT} matches the sources")
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
