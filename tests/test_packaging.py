"""The wheel must carry every subpackage and the shipped data (prompts/, templates/), so a
non-editable `pip install .` works from any directory."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(config["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_declared() -> None:
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "notes_cli").rglob("__init__.py")
    }
    declared = _declared_packages() - {"notes_cli.prompts", "notes_cli.templates"}
    assert found == declared, "add new subpackages to [tool.setuptools] packages in pyproject.toml"


def test_wheel_ships_prompts_and_templates(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        timeout=180,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("pdnotes-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("prompts", "templates"):
        shipped = {
            p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*") if p.is_file()
        }
        assert shipped, f"{folder}/ is empty"
        missing = {s for s in shipped if f"notes_cli/{s}" not in names}
        assert not missing, f"not in the wheel: {sorted(missing)[:5]}"
