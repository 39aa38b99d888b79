"""The real engines' launch flags, as recorded from their own argument definitions, and the check
that a launch sketch uses only those.

templates/launch/flags.toml holds, per engine (LMDeploy, vLLM, SGLang): the version and commit
the flags were read from, and for each command a sketch runs (`lmdeploy serve api_server`,
`vllm serve`, `python -m sglang.launch_server`, ...) every flag the sketches use, with the source
file that defines it, whether it takes a value, and its choices where the source fixes them.
`values` lists choices that live inside a flag's value (vLLM's kv_connector names in
--kv-transfer-config). scripts/extract_launch_flags.py writes the file from the engines' sources
and checks it against them; nothing here needs the sources.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from notes_cli.resources import template_path

_ENV_ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=")


class Sketch(Protocol):
    """What `check_sketch` reads of a launch sketch (`plan.launch.LaunchSketch`): the engine
    and its commands as shell text. A protocol, so the sketches import the flags and not back."""

    @property
    def engine(self) -> str: ...

    def commands(self) -> list[str]: ...


def is_flag(word: str) -> bool:
    """`--tp`, `-tp`; not a negative number such as `-1`."""
    return re.match(r"--?[A-Za-z]", word) is not None


@dataclass(frozen=True)
class FlagSpec:
    name: str
    file: str
    takes_value: bool
    choices: tuple[str, ...] | None = None
    json_keys: tuple[str, ...] = ()  # keys of a JSON value checked against `values`


@dataclass(frozen=True)
class CommandSpec:
    words: tuple[str, ...]  # ("lmdeploy", "serve", "api_server")
    file: str
    package: str
    version: str
    flags: dict[str, FlagSpec]

    @property
    def name(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class EngineFlags:
    engine: str
    version: str
    commit: str
    source: str
    commands: dict[str, CommandSpec]
    values: dict[str, tuple[str, tuple[str, ...]]] = field(
        default_factory=dict
    )  # name: (file, choices)


@dataclass(frozen=True)
class LaunchFlags:
    engines: dict[str, EngineFlags]

    def engine(self, name: str) -> EngineFlags:
        return self.engines[name]


def flags_path() -> Path:
    return template_path("launch", "flags.toml")


@cache
def load_launch_flags(path: Path | None = None) -> LaunchFlags:
    """The recorded flag data (shipped, so a failure to read it is a packaging bug)."""
    data = tomllib.loads((path or flags_path()).read_text(encoding="utf-8"))
    return parse_launch_flags(data)


def parse_launch_flags(data: dict[str, Any]) -> LaunchFlags:
    engines = {}
    for engine, row in data["engines"].items():
        commands = {}
        for name, command in row.get("commands", {}).items():
            flags = {
                flag: FlagSpec(
                    name=flag,
                    file=spec["file"],
                    takes_value=bool(spec["takes_value"]),
                    choices=tuple(str(c) for c in spec["choices"]) if "choices" in spec else None,
                    json_keys=tuple(spec.get("json_keys", ())),
                )
                for flag, spec in command.get("flags", {}).items()
            }
            commands[name] = CommandSpec(
                words=tuple(name.split()),
                file=command["file"],
                package=command.get("package", engine),
                version=command.get("version", row["version"]),
                flags=flags,
            )
        values = {
            name: (spec["file"], tuple(str(c) for c in spec["choices"]))
            for name, spec in row.get("values", {}).items()
        }
        engines[engine] = EngineFlags(
            engine=engine,
            version=row["version"],
            commit=row["commit"],
            source=row["source"],
            commands=commands,
            values=values,
        )
    return LaunchFlags(engines)


def split_command(
    argv: list[str] | tuple[str, ...], engine: EngineFlags
) -> tuple[CommandSpec, list[str]]:
    """(the recorded command argv runs, the words after it), env assignments skipped. KeyError
    (with the words) when argv runs no recorded command."""
    words = list(argv)
    while words and _ENV_ASSIGNMENT.match(words[0]):
        words.pop(0)
    for spec in sorted(engine.commands.values(), key=lambda c: -len(c.words)):
        if tuple(words[: len(spec.words)]) == spec.words:
            return spec, words[len(spec.words) :]
    raise KeyError(" ".join(words[:4]))


def check_command(argv: list[str] | tuple[str, ...], engine: EngineFlags) -> list[str]:
    """What is wrong with one command against the recorded flags: an unknown command or flag, a
    flag missing its value or given one it does not take, a value outside the recorded choices.
    Empty when every flag is one the engine defines."""
    try:
        command, rest = split_command(argv, engine)
    except KeyError as exc:
        return [f"`{exc.args[0]}` is not a command recorded for {engine.engine}"]
    where = f"{command.name} ({command.package} {command.version})"
    problems: list[str] = []
    seen_flag = False
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if not is_flag(word):
            if seen_flag:
                problems.append(f"{where}: stray word {word!r} after the flags")
            continue  # a positional (the model) before the first flag
        seen_flag = True
        name, eq, inline = word.partition("=")
        spec = command.flags.get(name)
        if spec is None:
            problems.append(f"{where}: {name} is not a recorded flag")
            while i < len(rest) and not is_flag(rest[i]):
                i += 1
            continue
        values = [inline] if eq else []
        while not eq and i < len(rest) and not is_flag(rest[i]):
            values.append(rest[i])
            i += 1
        if spec.takes_value and not values:
            problems.append(f"{where}: {name} needs a value")
        if not spec.takes_value and values:
            problems.append(f"{where}: {name} takes no value (got {' '.join(values)!r})")
        if spec.choices is not None:
            problems += [
                f"{where}: {name} {v!r} is not one of {', '.join(spec.choices)} ({spec.file})"
                for v in values
                if v not in spec.choices
            ]
        for value in values if spec.json_keys else []:
            problems += _check_json(where, name, value, spec, engine)
    return problems


def _check_json(
    where: str, flag: str, value: str, spec: FlagSpec, engine: EngineFlags
) -> list[str]:
    try:
        data = json.loads(value)
    except ValueError:
        return [f"{where}: {flag} is not JSON: {value!r}"]
    problems = []
    for key in spec.json_keys:
        file, choices = engine.values[key]
        if key in data and str(data[key]) not in choices:
            problems.append(
                f"{where}: {flag} {key} {data[key]!r} is not one of {', '.join(choices)} ({file})"
            )
    return problems


def check_sketch(sketch: Sketch, flags: LaunchFlags | None = None) -> list[str]:
    """Every problem of every command of `sketch`, read back from its shell text."""
    import shlex

    engine = (flags or load_launch_flags()).engine(sketch.engine)
    problems = []
    for command in sketch.commands():
        problems += check_command(shlex.split(command.replace("\\\n", " ")), engine)
    return problems
