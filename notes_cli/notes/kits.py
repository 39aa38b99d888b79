"""Note kits: a prompt per language, the table's columns and a rubric — all data files.

A kit is a folder holding `kit.toml` (name, title, columns with synonyms), `rubric.toml`
(required rows and the concepts their cells must mention) and `prompt.<lang>.md` for each
language it lists. Bundled kits live in the shipped `prompts/` folder; users add their own under
`$PDNOTES_HOME/kits/<name>/`, and a user kit with a bundled kit's name replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from notes_cli.errors import KitError

Origin = Literal["bundled", "user"]
DEFAULT_KIT = "pd-disagg"


@dataclass(frozen=True)
class Column:
    key: str
    zh: str
    en: str
    synonyms: tuple[str, ...]

    def label(self, lang: str) -> str:
        return self.zh if lang == "zh" else self.en

    @property
    def names(self) -> tuple[str, ...]:
        """Every spelling a header cell may use for this column."""
        return (self.key, self.zh, self.en, *self.synonyms)


@dataclass(frozen=True)
class Concept:
    key: str
    label: str
    synonyms: tuple[str, ...]


@dataclass(frozen=True)
class RubricRow:
    key: str
    label: str
    required: bool
    match: tuple[str, ...]
    concepts: tuple[Concept, ...]


@dataclass(frozen=True)
class Rubric:
    rows: tuple[RubricRow, ...]
    pass_score: float


@dataclass(frozen=True)
class Kit:
    name: str
    title: str
    description: str
    languages: tuple[str, ...]
    default_language: str
    columns: tuple[Column, ...]
    rubric: Rubric
    prompts: dict[str, str]
    path: Path
    origin: Origin
    titles: dict[str, str] = field(default_factory=dict)

    def title_for(self, lang: str) -> str:
        """The title in `lang` (kit.toml's `[titles]`), else the default `title`."""
        return self.titles.get(lang, self.title)

    def prompt(self, lang: str | None = None) -> str:
        """The kit's prompt text in `lang` (default: the kit's default language)."""
        lang = lang or self.default_language
        if lang not in self.prompts:
            from notes_cli.errors import UsageError

            raise UsageError(
                f"kit {self.name!r} has no {lang!r} prompt",
                fix=f"use --lang with one of: {', '.join(self.languages)}",
            )
        return self.prompts[lang]


def bundled_kits_dir() -> Path:
    from notes_cli.resources import data_dir

    return data_dir("prompts")


def user_kits_dir() -> Path:
    from notes_cli.paths import pdnotes_home

    return pdnotes_home() / "kits"


def list_kits() -> list[Kit]:
    """Every kit, bundled and user, sorted by name; a user kit shadows a bundled namesake.
    Raises KitError for the first malformed kit found."""
    found: dict[str, Kit] = {}
    for origin, folder in (("bundled", bundled_kits_dir()), ("user", user_kits_dir())):
        for kit_dir in _kit_dirs(folder):
            kit = load_kit_dir(kit_dir, origin)  # type: ignore[arg-type]
            found[kit.name] = kit
    return sorted(found.values(), key=lambda k: k.name)


def load_kit(name: str) -> Kit:
    """The kit called `name` (user kits first), or a UsageError listing the known kits."""
    for origin, folder in (("user", user_kits_dir()), ("bundled", bundled_kits_dir())):
        kit_dir = folder / name
        if (kit_dir / "kit.toml").is_file():
            return load_kit_dir(kit_dir, origin)  # type: ignore[arg-type]
    from notes_cli.errors import UsageError

    known = sorted({d.name for f in (bundled_kits_dir(), user_kits_dir()) for d in _kit_dirs(f)})
    raise UsageError(
        f"no note kit called {name!r}",
        fix=f"choose one of: {', '.join(known) or '(none)'} (see `pdnotes notes kits`)",
    )


def _kit_dirs(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / "kit.toml").is_file())


def load_kit_dir(kit_dir: Path, origin: Origin = "user") -> Kit:
    """Read and validate one kit folder. Every problem names the file and the field."""
    kit_file, rubric_file = kit_dir / "kit.toml", kit_dir / "rubric.toml"
    meta = _Fields(_read_toml(kit_file), kit_file)
    rub = _Fields(_read_toml(rubric_file), rubric_file)
    languages = tuple(meta.str_list("languages", default=["zh", "en"]))
    columns = tuple(_column(f) for f in meta.tables("columns"))
    rubric = Rubric(
        rows=tuple(_rubric_row(f) for f in rub.tables("rows")),
        pass_score=rub.number("pass_score", default=1.0),
    )
    prompts = {lang: _read_prompt(kit_dir, lang) for lang in languages}
    kit = Kit(
        name=meta.text("name"),
        title=meta.text("title"),
        titles=meta.str_table("titles"),
        description=meta.text("description", default=""),
        languages=languages,
        default_language=meta.text("default_language", default=languages[0] if languages else ""),
        columns=columns,
        rubric=rubric,
        prompts=prompts,
        path=kit_dir,
        origin=origin,
    )
    _check_consistency(kit, kit_file, rubric_file)
    return kit


def _column(f: _Fields) -> Column:
    return Column(f.text("key"), f.text("zh"), f.text("en"), tuple(f.str_list("synonyms", [])))


def _rubric_row(f: _Fields) -> RubricRow:
    return RubricRow(
        key=f.text("key"),
        label=f.text("label"),
        required=f.flag("required", default=True),
        match=tuple(f.str_list("match")),
        concepts=tuple(
            Concept(c.text("key"), c.text("label"), tuple(c.str_list("synonyms")))
            for c in f.tables("concepts", required=False)
        ),
    )


def _check_consistency(kit: Kit, kit_file: Path, rubric_file: Path) -> None:
    if not kit.columns:
        raise KitError(f"{kit_file}: field 'columns' must list at least one column")
    if kit.default_language not in kit.languages:
        raise KitError(
            f"{kit_file}: field 'default_language' is {kit.default_language!r}, "
            f"not one of 'languages' ({', '.join(kit.languages)})"
        )
    if kit.name != kit.path.name:
        raise KitError(
            f"{kit_file}: field 'name' is {kit.name!r} but the folder is {kit.path.name!r}",
            fix="make the kit's name and its folder name the same",
        )
    if not 0 < kit.rubric.pass_score <= 1:
        raise KitError(f"{rubric_file}: field 'pass_score' must be in (0, 1]")


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KitError(f"cannot read kit file {path}: {exc.strerror or exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KitError(f"{path}: TOML syntax error: {exc}") from exc


def _read_prompt(kit_dir: Path, lang: str) -> str:
    path = kit_dir / f"prompt.{lang}.md"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise KitError(
            f"{kit_dir / 'kit.toml'}: field 'languages' lists {lang!r} but {path.name} "
            "cannot be read",
            fix=f"add {path} or remove {lang!r} from 'languages'",
        ) from exc
    if not text:
        raise KitError(f"{path}: the prompt is empty")
    return text


class _Fields:
    """Typed access to one TOML table; errors name the file and the dotted field path."""

    def __init__(self, data: dict[str, Any], path: Path, prefix: str = "") -> None:
        self.data, self.path, self.prefix = data, path, prefix

    def _fail(self, name: str, problem: str) -> KitError:
        return KitError(f"{self.path}: field '{self.prefix}{name}' {problem}")

    def _get(self, name: str, default: Any) -> Any:
        if name in self.data:
            return self.data[name]
        if default is _REQUIRED:
            raise self._fail(name, "is missing")
        return default

    def text(self, name: str, default: Any = None) -> str:
        value = self._get(name, _REQUIRED if default is None else default)
        if not isinstance(value, str) or (default is None and not value.strip()):
            raise self._fail(name, "must be a non-empty string")
        return value

    def str_list(self, name: str, default: Any = None) -> list[str]:
        value = self._get(name, _REQUIRED if default is None else default)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self._fail(name, "must be a list of non-empty strings")
        return value

    def str_table(self, name: str) -> dict[str, str]:
        """An optional table of non-empty strings (e.g. a title per language)."""
        value = self._get(name, {})
        if not isinstance(value, dict) or not all(
            isinstance(v, str) and v.strip() for v in value.values()
        ):
            raise self._fail(name, "must be a table of non-empty strings ([titles] zh = …)")
        return dict(value)

    def flag(self, name: str, default: bool) -> bool:
        value = self._get(name, default)
        if not isinstance(value, bool):
            raise self._fail(name, "must be true or false")
        return value

    def number(self, name: str, default: float) -> float:
        value = self._get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(name, "must be a number")
        return float(value)

    def tables(self, name: str, required: bool = True) -> list[_Fields]:
        value = self._get(name, _REQUIRED if required else [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self._fail(name, f"must be an array of tables ([[{self.prefix}{name}]])")
        return [
            _Fields(item, self.path, f"{self.prefix}{name}[{i}].") for i, item in enumerate(value)
        ]


_REQUIRED = object()
