"""The demo's private world: its own CODEX_HOME, CLAUDE_CONFIG_DIR and PDNOTES_HOME in a temp
folder (or --keep DIR), and an environment without the user's gateway variables, so nothing the
demo does can touch the user's real clients or leak their keys into its output."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from notes_cli.demo.step import ALSO, CLIENT

# Variables that would change what the clients or pdnotes see; hidden while the demo runs.
_HIDDEN_PREFIXES = ("OPENAI_", "ANTHROPIC_", "CODEX_", "CLAUDE_", "TAOTOKEN_", "DEEPSEEK_")
_HIDDEN = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True)
class Sandbox:
    root: Path

    @property
    def client_home(self) -> Path:
        """The demo client's folder (`demo.step.CLIENT`)."""
        return self.root / CLIENT

    @property
    def also_home(self) -> Path:
        """The other client's folder (`demo.step.ALSO`)."""
        return self.root / ALSO

    @property
    def pdnotes_home(self) -> Path:
        return self.root / "pdnotes"

    @property
    def project(self) -> Path:
        """An empty project folder, so no .claude/ settings of the user's cwd are merged."""
        return self.root / "project"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    def scratch(self, name: str) -> Path:
        return self.root / "mistakes" / name


@contextmanager
def sandbox(keep: Path | None = None) -> Iterator[Sandbox]:
    """Yield a Sandbox with the environment pointed at it; restore everything on exit and
    remove the folder unless `keep` names where to leave it."""
    root = keep.expanduser().resolve() if keep else Path(tempfile.mkdtemp(prefix="pdnotes-demo-"))
    box = Sandbox(root)
    for folder in (box.client_home, box.also_home, box.pdnotes_home, box.project, box.notes):
        folder.mkdir(parents=True, exist_ok=True)
    saved = dict(os.environ)
    try:
        for name in list(os.environ):
            if name in _HIDDEN or name.startswith(_HIDDEN_PREFIXES):
                del os.environ[name]
        os.environ["CODEX_HOME"] = str(box.client_home)
        os.environ["CLAUDE_CONFIG_DIR"] = str(box.also_home)
        os.environ["PDNOTES_HOME"] = str(box.pdnotes_home)
        os.environ["NO_PROXY"] = "127.0.0.1,localhost"
        yield box
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
