"""`pdnotes demo`: the whole story against the bundled engine, in a sandbox, step by step.

Each step calls the same core functions as the matching `pdnotes` command and returns a `Step`
(what was run, whether it did what it should, the data to show). The caller renders each step as
it arrives (`on_step`) and, under --json, the whole `DemoReport`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notes_cli.demo.sandbox import Sandbox, sandbox
from notes_cli.demo.step import ALSO, CLIENT, ENGINE_PRESET, TITLES, Step, failed_step

if TYPE_CHECKING:
    from notes_cli.notes.export import ExportFormat

FORMATS: tuple[ExportFormat, ...] = ("md", "csv", "json", "html")


@dataclass
class DemoReport:
    lang: str
    speed: float
    kept: str | None
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "pdnotes.demo/1",
            "ok": self.ok,
            "lang": self.lang,
            "speed": self.speed,
            "kept": self.kept,
            "steps": [s.to_json() for s in self.steps],
        }


def run_demo(
    *,
    lang: str = "en",
    speed: float = 5.0,
    keep: Path | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> DemoReport:
    """Run every step; a failing step is recorded and the demo goes on to the next one. A step
    that raises is recorded as failed, with what it expected, what it saw and the fix
    (`failed_step`): the demo never ends in a traceback (issue 35)."""
    from notes_cli.engine.core.config import EngineConfig
    from notes_cli.engine.http.server import start_engine

    report = DemoReport(lang, speed, str(keep.expanduser().resolve()) if keep else None)

    def record(key: str, run: Callable[[], Step]) -> None:
        try:
            step = run()
        except Exception as exc:  # every step's failure is a sentence, whatever raised it
            step = failed_step(key, exc)
        report.steps.append(step)
        if on_step is not None:
            on_step(step)

    with ExitStack() as stack:
        try:
            box = stack.enter_context(sandbox(keep))
            eng = stack.enter_context(start_engine(EngineConfig(preset=ENGINE_PRESET, speed=speed)))
        except Exception as exc:  # nothing else can run without the sandbox and the engine
            failed = failed_step("engine", exc)
            record("engine", lambda: failed)
            return report
        record("engine", lambda: _engine_step(eng.base_url, eng.anthropic_base_url, speed))
        record("config", lambda: _config_step(box, eng.base_url, eng.anthropic_base_url))
        record("doctor", lambda: _doctor_step(box))
        record("mistakes", lambda: _mistakes_step(box, eng.anthropic_base_url))
        record("smoke", lambda: _smoke_step(box))
        record("notes", lambda: _notes_step(box, lang))
        record("bridge", lambda: _bridge(box, speed))
        record("experiment", _experiment_step)
        record("next", lambda: _next_step(box, keep))
    return report


def _bridge(box: Sandbox, speed: float) -> Step:
    from notes_cli.demo.bridge_step import bridge_step

    return bridge_step(box, speed)


def _engine_step(base_url: str, anthropic_base_url: str, speed: float) -> Step:
    return Step(
        "engine",
        TITLES["engine"],
        True,
        [f"pdnotes engine serve --preset {ENGINE_PRESET} --speed {speed:g}"],
        {
            "preset": ENGINE_PRESET,
            "base_url": base_url,
            "anthropic_base_url": anthropic_base_url,
        },
    )


def _config_step(box: Sandbox, base_url: str, anthropic_base_url: str) -> Step:
    from notes_cli.clients import registry
    from notes_cli.clients.plan import apply
    from notes_cli.clients.plugin import ConfigRequest, Where

    client, also = registry.get(CLIENT), registry.get(ALSO)
    assert client is not None and also is not None
    request = ConfigRequest(
        {"preset": "mock", "base_url": base_url}, Where({CLIENT: box.client_home})
    )
    first = apply(client.plan(request))
    second = apply(
        also.plan(
            ConfigRequest(
                {"preset": "mock", "base_url": anthropic_base_url},
                Where({ALSO: box.also_home}, box.project),
            )
        )
    )
    files = [
        {"client": r.plan.client, "file": str(r.plan.path), "request_url": r.plan.request_url}
        for r in (first, second)
    ]
    return Step(
        "config",
        TITLES["config"],
        all(r.written for r in (first, second)),
        [
            f"pdnotes config {CLIENT} --preset mock --base-url {base_url}",
            f"pdnotes config {ALSO} --preset mock --base-url {anthropic_base_url}",
        ],
        {"files": files},
    )


def _doctor_step(box: Sandbox) -> Step:
    from notes_cli.doctor.run import run_doctor

    report = run_doctor(
        "all",
        offline=False,
        project_dir=box.project,
        homes={CLIENT: box.client_home, ALSO: box.also_home},
    )
    return Step(
        "doctor",
        TITLES["doctor"],
        report.ok,
        ["pdnotes doctor"],
        {"doctor": report.to_json()},
    )


def _mistakes_step(box: Sandbox, anthropic_base_url: str) -> Step:
    from notes_cli.demo.mistakes import load_mistakes
    from notes_cli.doctor.run import run_doctor

    config_text = _config_file(box.client_home).read_text(encoding="utf-8")
    cases = []
    for number, mistake in enumerate(load_mistakes(), start=1):
        scratch = box.scratch(f"{number}")
        scratch.mkdir(parents=True, exist_ok=True)
        broken = mistake.apply(config_text, anthropic_base_url=anthropic_base_url)
        _config_file(scratch).write_text(broken, encoding="utf-8")
        report = run_doctor(CLIENT, offline=False, homes={CLIENT: scratch}, timeout=5.0)
        caught = next((f for f in report.findings if f.id == mistake.expect), None)
        cases.append(
            {
                "mistake": mistake.name,
                "article": mistake.article,
                "expect": mistake.expect,
                "caught": caught is not None,
                "finding": caught.to_json() if caught else None,
                "codex_home": str(scratch),
            }
        )
    return Step(
        "mistakes",
        TITLES["mistakes"],
        all(case["caught"] for case in cases),
        ["pdnotes doctor --client codex --codex-home <scratch copy>"],
        {"cases": cases},
    )


def _smoke_step(box: Sandbox) -> Step:
    from notes_cli.clients.setups import resolve_endpoints
    from notes_cli.smoke import run_smoke

    (endpoint,) = resolve_endpoints(CLIENT, homes={CLIENT: box.client_home})
    report = run_smoke(endpoint, n=3, timeout=30.0)
    return Step(
        "smoke",
        TITLES["smoke"],
        report.verdict.ok,
        ["pdnotes smoke --client codex -n 3"],
        {"smoke": report.to_json()},
    )


class _QuietProgress:
    """generate_note's observer: the demo shows the outcome, not the stream."""

    def attempt_started(self, number: int, kind: str, request: str) -> None:
        pass

    def chunk(self, text: str, elapsed_ms: float) -> None:
        pass

    def attempt_finished(self, attempt: Any) -> None:
        pass

    def slow(self, message: str) -> None:
        pass


def _notes_step(box: Sandbox, lang: str) -> Step:
    from notes_cli.clients.setups import resolve_endpoints
    from notes_cli.notes import generate as gen
    from notes_cli.notes.kits import load_kit

    kit = load_kit("pd-disagg")
    (endpoint,) = resolve_endpoints(CLIENT, homes={CLIENT: box.client_home})
    prompt = gen.build_prompt(kit, lang)
    result = gen.generate_note(kit, lang, endpoint, prompt, observer=_QuietProgress())
    written = []
    for fmt in FORMATS:
        path = box.notes / f"pd-disagg-{lang}.{fmt}"
        gen.finish_note(result, lang=lang, endpoint=endpoint, prompt=prompt, fmt=fmt, path=path)
        written.append(str(path))
    check = result.check
    table = _table(check, lang)
    return Step(
        "notes",
        TITLES["notes"],
        result.passed and all(Path(p).is_file() for p in written),
        [f"pdnotes notes generate --client codex --lang {lang} -o notes/pd-disagg-{lang}.md"],
        {
            "verdict": check.verdict,
            "attempts": len(result.attempts),
            "files": written,
            "table": table,
        },
    )


def _table(check: Any, lang: str) -> dict[str, Any]:
    """The note's table as the kit's column labels and the cells under them."""
    table = check.extraction.table
    columns = check.kit.columns
    if table is None:
        return {"columns": [], "rows": []}
    return {
        "columns": [c.label(lang) for c in columns],
        "rows": [[table.cell(row, c.key) for c in columns] for row in table.rows],
    }


def _experiment_step() -> Step:
    from notes_cli.demo.pd_experiment import PRESETS, run_experiment

    result = run_experiment()
    colocated, disagg = result.presets
    shows_it = result.gap_ratio >= 3 and disagg.long_transfer_ms > 0
    return Step(
        "experiment",
        TITLES["experiment"],
        shows_it,
        [f"pdnotes engine serve --preset {preset} --speed {result.speed:g}" for preset in PRESETS],
        {"experiment": result.to_json()},
    )


def _next_step(box: Sandbox, keep: Path | None) -> Step:
    files = {
        "codex_config": str(_config_file(box.client_home)),
        "claude_settings": str(_config_file(box.also_home, ALSO)),
        "notes": str(box.notes),
    }
    return Step(
        "next",
        TITLES["next"],
        True,
        [
            "pdnotes config codex --preset taotoken --model YOUR_MODEL_ID",
            "export TAOTOKEN_API_KEY=…  # in your shell, never in a file",
            "pdnotes doctor",
            "pdnotes smoke --client codex",
            "pdnotes notes generate --client codex --lang zh -o pd-notes.md",
        ],
        {"files": files if keep else {}, "kept": keep is not None},
    )


def _config_file(home: Path, name: str = CLIENT) -> Path:
    """A demo client's user config file in `home` (Codex's config.toml)."""
    from notes_cli.clients import registry
    from notes_cli.clients.plugin import Where

    client = registry.get(name)
    assert client is not None
    return client.missing_file(Where({name: home}))
