"""pdnotes notes …: list kits, generate a note through the configured model, check an answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from notes_cli.clients import registry

app = typer.Typer(
    help="Turn PD-disaggregation reading into a validated stage / bottleneck / optimisation / "
    "component table: list kits, show what sources yield, generate and check notes, make cards "
    "and compare two notes.",
    no_args_is_help=True,
)

_JSON = typer.Option(False, "--json", help="Print one JSON document on stdout.")
_KIT = typer.Option("pd-disagg", "--kit", help="Note kit to use (see `pdnotes notes kits`).")


@app.command("kits")
def kits(as_json: bool = _JSON) -> None:
    """List the note kits: bundled ones and yours under $PDNOTES_HOME/kits."""
    from notes_cli import render
    from notes_cli.notes.kits import list_kits
    from notes_cli.notes.report import kits_json

    found = list_kits()
    if as_json:
        render.emit_json(kits_json(found))
        return
    from notes_cli.render import notes as draw

    draw.kits(found)


@app.command("generate")
def generate(
    kit: str = _KIT,
    lang: str | None = typer.Option(
        None, "--lang", help="Prompt language: zh or en (default: the kit's)."
    ),
    source: list[str] = typer.Option(
        [],
        "--source",
        help="Your reading to add to the prompt: a PDF, HTML, Markdown or text file, or an "
        "http(s) URL; repeatable.",
    ),
    fmt: str | None = typer.Option(
        None, "--format", help="md, csv, json or html (default: from -o's suffix, else md)."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Where to write the note."),
    client: str | None = typer.Option(
        None,
        "--client",
        help=f"Use this client's configured endpoint: {registry.listing('openai')}.",
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="Call this base URL instead."),
    model: str | None = typer.Option(None, "--model", help="Model id (overrides the config)."),
    key_env: str | None = typer.Option(
        None, "--key-env", help="Environment variable holding the key for --base-url."
    ),
    protocol: str = typer.Option(
        "chat",
        "--protocol",
        help="Wire protocol for --base-url: chat, responses, anthropic or gemini.",
    ),
    no_repair: bool = typer.Option(
        False, "--no-repair", help="Do not ask the model to fix its table."
    ),
    max_repairs: int = typer.Option(
        2, "--max-repairs", min=1, max=2, help="Repair requests (1 or 2)."
    ),
    max_source_tokens: int = typer.Option(
        6000, "--max-source-tokens", min=0, help="Token budget for all --source text together."
    ),
    cut: bool = typer.Option(
        False,
        "--cut",
        help="When the sources exceed --max-source-tokens, keep only what fits (and say what "
        "was left out) instead of reading them in map steps.",
    ),
    max_calls: int = typer.Option(
        12,
        "--max-calls",
        min=1,
        help="Most requests reading the sources may take (map steps + the note; repairs are "
        "bounded by --max-repairs).",
    ),
    max_tokens: int = typer.Option(
        4096, "--max-tokens", min=64, help="Output token limit per answer."
    ),
    timeout: float = typer.Option(
        120.0, "--timeout", min=1.0, help="Seconds to wait for the model."
    ),
    grounded: bool = typer.Option(
        False,
        "--grounded",
        help="Fail unless every concept is cited from a --source (as `notes check --grounded`); "
        "the repair requests ask for it.",
    ),
    as_json: bool = _JSON,
) -> None:
    """Ask the model for the kit's table, check it against the rubric, repair it if needed, and
    write the note. Exit 0 when the note passes, 1 when it fails or the model could not be used.
    With --source the note is judged exactly as `notes check --source` (and --grounded) judges
    the written file.
    """
    from notes_cli import render
    from notes_cli.errors import UsageError
    from notes_cli.notes import generate as gen
    from notes_cli.notes.documents import load_document
    from notes_cli.notes.export import FORMATS
    from notes_cli.notes.kits import load_kit
    from notes_cli.notes.reading import plan_reading
    from notes_cli.notes.tokens import estimate_tokens
    from notes_cli.render import notes as draw

    chosen = load_kit(kit)
    if grounded and not source:
        raise UsageError("--grounded needs the reading: pass --source FILE (or URL)")
    language = lang or chosen.default_language
    if language not in chosen.languages:
        raise UsageError(f"--lang {language}: kit {kit!r} has {', '.join(chosen.languages)}")
    if protocol not in ("chat", "responses", "anthropic", "gemini"):
        raise UsageError(f"--protocol {protocol}: use chat, responses, anthropic or gemini")
    export_format = _export_format(fmt, output, FORMATS)
    if output is not None:
        from notes_cli.fileio import require_output_folder

        require_output_folder(output, "-o")
    path = output or Path(f"{chosen.name}-{language}-{_stamp()}.{export_format}")
    endpoint = gen.choose_endpoint(
        client, base_url=base_url, model=model, key_env=key_env, protocol=protocol
    )
    documents = [load_document(s) for s in source]
    plan = plan_reading(
        documents,
        max_source_tokens,
        cut=cut,
        max_calls=max_calls,
        max_output_tokens=max_tokens,
    )
    draw.reading_plan(plan, estimate_tokens(chosen.prompt(language)))
    progress = draw.GenerateProgress(endpoint.model, endpoint.request_url())
    mapped = gen.read_sources(
        plan,
        chosen,
        language,
        endpoint,
        observer=progress,
        max_tokens=max_tokens,
        timeout=timeout,
    )
    prompt = gen.build_prompt(chosen, language, plan, mapped)
    if prompt.dropped_facts:
        draw.facts_dropped(prompt)
    result = gen.generate_note(
        chosen,
        language,
        endpoint,
        prompt,
        observer=progress,
        repairs=0 if no_repair else max_repairs,
        max_tokens=max_tokens,
        timeout=timeout,
        grounded=grounded,
    )
    gen.finish_note(
        result, lang=language, endpoint=endpoint, prompt=prompt, fmt=export_format, path=path,
        max_tokens=max_tokens,
    )  # fmt: skip
    if as_json:
        render.emit_json(gen.report_json(result, prompt, export_format, max_tokens))
    else:
        draw.generate_summary(result)
    if not result.passed:
        raise typer.Exit(1)


@app.command("sources")
def sources(
    spec: list[str] = typer.Argument(..., help="Files (PDF, HTML, Markdown, text) or URLs."),
    as_json: bool = _JSON,
) -> None:
    """Show what `--source` would read from each file or URL: title, pages, tokens, and what was
    left out as boilerplate. Exit 2 when a source cannot be read."""
    from notes_cli import render
    from notes_cli.notes.documents import load_document
    from notes_cli.notes.report import documents_json

    found = [load_document(s) for s in spec]
    if as_json:
        render.emit_json(documents_json(found))
        return
    from notes_cli.render import notes as draw

    draw.documents(found)


def _read_note(path: Path, kit: Any) -> Any:
    from notes_cli.notes.check import check_text, read_answer

    text, source_format = read_answer(path)
    return check_text(text, kit, source_format=source_format)


@app.command("cards")
def cards(
    note: Path = typer.Argument(..., help="A note or saved answer (.md, .json, .csv, .html)."),
    output: Path = typer.Option(
        ...,
        "-o",
        "--output",
        help="Where to write the cards: a .csv file, or a .apkg Anki deck (needs the `anki` "
        "extra: pip install 'pdnotes[anki]').",
    ),
    kit: str = _KIT,
) -> None:
    """Flashcards from a note: one card per concept the rubric finds in a cell, in both
    directions (where → what, what → where), labelled in Chinese and English. Exit 1 when the
    note has no table to make cards from."""
    from notes_cli import render
    from notes_cli.errors import PdnotesError, UsageError
    from notes_cli.fileio import atomic_write, require_output_folder
    from notes_cli.notes import cards as flash
    from notes_cli.notes.kits import load_kit

    suffix = output.suffix.lower()
    if suffix not in (".apkg", ".csv"):
        raise UsageError(f"-o {output}: name a .apkg (Anki deck) or .csv file")
    require_output_folder(output, "-o")
    chosen = load_kit(kit)
    checked = _read_note(note, chosen)
    found = flash.cards_from(checked)
    if not found:
        raise PdnotesError(
            f"no cards: {note} has no table with the kit's concepts ({checked.extraction.detail})",
            fix="run `pdnotes notes check` on it to see what is missing",
        )
    if suffix == ".csv":
        data: bytes | str = flash.to_csv(found)
    else:
        try:
            import genanki  # noqa: F401
        except ImportError as exc:
            raise UsageError(
                "writing an Anki deck needs genanki",
                fix="pip install 'pdnotes[anki]', or write -o cards.csv (Anki imports CSV too)",
            ) from exc
        data = flash.to_apkg(
            found, kit=chosen.name, title=chosen.title_for(chosen.default_language)
        )
    written = atomic_write(output, data)
    render.note(f"wrote {len(found)} cards × 2 directions to {written}")


@app.command("compare")
def compare(
    a: Path = typer.Argument(..., help="The first note or saved answer."),
    b: Path = typer.Argument(..., help="The second note or saved answer."),
    kit: str = _KIT,
    lang: str | None = typer.Option(
        None, "--lang", help="Column labels in zh or en (default: the language of note A)."
    ),
    as_json: bool = _JSON,
) -> None:
    """Where two notes (two models, two runs, Chinese and English) agree and differ: cell by
    cell and concept by concept, by the kit's concepts in either language. Exit 0 when they
    agree, 1 when any cell differs."""
    from notes_cli import render
    from notes_cli.notes.compare import compare as compare_notes
    from notes_cli.notes.kits import load_kit

    if lang not in (None, "zh", "en"):
        from notes_cli.errors import UsageError

        raise UsageError(f"--lang {lang}: use zh or en")
    chosen = load_kit(kit)
    result = compare_notes(
        _read_note(a, chosen),
        _read_note(b, chosen),
        lang,
        (str(a), str(b)),
    )
    if as_json:
        render.emit_json(result.to_json())
    else:
        from notes_cli.render import notes as draw

        draw.comparison(result)
    if result.differing_cells:
        raise typer.Exit(1)


def _export_format(fmt: str | None, output: Path | None, formats: tuple[str, ...]) -> Any:
    """--format, else the suffix of -o when it names a format, else Markdown."""
    from notes_cli.errors import UsageError

    if fmt is None:
        suffix = output.suffix.lower().lstrip(".") if output else ""
        fmt = {"markdown": "md", "htm": "html"}.get(suffix, suffix)
        if fmt not in formats:
            fmt = "md"
    if fmt not in formats:
        raise UsageError(f"--format {fmt}: choose one of {', '.join(formats)}")
    return fmt


def _stamp() -> str:
    from datetime import datetime

    return datetime.now().strftime("%Y%m%d-%H%M%S")


@app.command("check")
def check(
    file: Path = typer.Argument(
        ..., help="A saved answer: .md, .txt, .html, .json or .csv (- reads stdin)."
    ),
    kit: str = _KIT,
    source: list[str] = typer.Option(
        [],
        "--source",
        help="The reading the note was made from (files or URLs, in the order given to "
        "generate: the first is S1): report whether each concept is cited and supported.",
    ),
    grounded: bool = typer.Option(
        False, "--grounded", help="Fail unless every concept is cited from a --source."
    ),
    as_json: bool = _JSON,
) -> None:
    """Extract the table from a saved answer and score it against the kit's rubric.

    Exit 0 when it passes, 1 when it fails (missing table, columns, rows or concepts; a refusal
    or a truncated answer; with --grounded, a concept not cited from the sources), 2 when the
    file or a source cannot be read.
    """
    import sys

    from notes_cli import render
    from notes_cli.notes.check import check_text, read_answer
    from notes_cli.notes.kits import load_kit
    from notes_cli.notes.report import check_json

    chosen = load_kit(kit)
    if grounded and not source:
        from notes_cli.errors import UsageError

        raise UsageError("--grounded needs the reading: pass --source FILE (or URL)")
    if str(file) == "-":
        name = "(stdin)"
        from notes_cli.notes.tables import MAX_ANSWER_CHARS

        # One character past the bound is enough for check_text to refuse it.
        result = check_text(sys.stdin.read(MAX_ANSWER_CHARS + 1), chosen)
    else:
        name = str(file)
        text, source_format = read_answer(file)
        result = check_text(text, chosen, source_format=source_format)
    if source:
        from notes_cli.notes.check import with_grounding
        from notes_cli.notes.documents import load_document
        from notes_cli.notes.passages import split_passages

        documents = [load_document(s) for s in source]
        names = tuple(d.name for d in documents)
        result = with_grounding(result, split_passages(documents), names, grounded=grounded)
    if as_json:
        render.emit_json(check_json(result, name))
    else:
        from notes_cli.render import notes as draw

        draw.check_report(result, name)
    if not result.passed:
        raise typer.Exit(1)
