"""No lost updates (issue 11.8): pdnotes processes writing one client file queue on a lock held
from the read to the replace; a killed write leaves the file old or new and its temp files are
removed by the next run; a write that failed leaves no backup for `undo` to "restore"."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from notes_cli import backups, fileio

WRITERS = 10
ROUNDS = 1
KILLS = 20


def writer_args(model: str) -> list[str]:
    return [sys.executable, "-m", "notes_cli", "config", "codex", "--provider", "gw",
            "--base-url", "https://gw.example/api", "--model", model]  # fmt: skip


def config(home: Path) -> Path:
    return home / ".codex" / "config.toml"


def backup_texts(home: Path) -> list[str]:
    folder = home / ".pdnotes" / "backups" / "codex"
    return [p.read_text(encoding="utf-8") for p in folder.glob("*.bak")]


def model_of(text: str) -> str:
    return str(tomllib.loads(text)["model"])


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_concurrent_writers_lose_no_reported_write(isolated_home: Path, round_: int) -> None:
    path = config(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text('# mine\nmodel = "start"\n')
    procs = {
        f"m-{round_}-{i}": subprocess.Popen(
            writer_args(f"m-{round_}-{i}"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for i in range(WRITERS)
    }
    results = {model: (p.wait(timeout=60), p.stderr.read()) for model, p in procs.items()}  # type: ignore[union-attr]
    for p in procs.values():
        p.stdout.close()  # type: ignore[union-attr]
        p.stderr.close()  # type: ignore[union-attr]

    assert all(code == 0 for code, _ in results.values()), results  # they queue, none fails
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)  # one writer's complete state
    assert text.startswith("# mine\n")
    assert data["model_provider"] == "gw" and data["model"] in results
    assert data["model_providers"]["gw"]["base_url"] == "https://gw.example/api"
    kept = {model_of(t) for t in backup_texts(isolated_home)}
    for model, (code, _) in results.items():
        if code == 0:
            assert model == data["model"] or model in kept, f"{model} was lost"
    assert "start" in kept
    assert not list(path.parent.glob(".config.toml.*"))


def test_a_writer_killed_at_random_leaves_old_or_new_and_the_next_run_cleans_up(
    cli, isolated_home: Path
) -> None:
    path = config(isolated_home)
    assert cli("config", "codex", "--provider", "gw", "--base-url", "https://gw.example/api",
               "--model", "first").exit_code == 0  # fmt: skip
    started = time.monotonic()
    subprocess.run(writer_args("timing"), env=os.environ.copy(), check=True, timeout=60)
    runtime = time.monotonic() - started
    rng = random.Random(11)
    for n in range(KILLS):
        before = path.read_text(encoding="utf-8")
        proc = subprocess.Popen(
            writer_args(f"k-{n}"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=os.environ.copy(),
        )
        time.sleep(rng.uniform(0.5, 1.1) * runtime)  # most kills land near the write itself
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        after = path.read_text(encoding="utf-8")
        assert after == before or model_of(after) == f"k-{n}"
        tomllib.loads(after)  # never half a file
    (path.parent / ".config.toml.abc123.pdnotes-tmp").write_text("left by a crash")

    assert cli("config", "codex", "--model", "last").exit_code == 0

    assert not list(path.parent.glob(".config.toml.*"))
    assert model_of(path.read_text(encoding="utf-8")) == "last"
    folder = isolated_home / ".pdnotes" / "backups" / "codex"
    assert all(b.pending is None for b in backups._all_backups("codex", undone=False))
    assert len(list(folder.glob("*.json"))) <= backups.KEEP
    previous = backups.latest("codex")
    assert previous is not None
    state_before_last = previous.data_path.read_bytes()
    tomllib.loads(state_before_last.decode())
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_bytes() == state_before_last


def test_a_failed_write_leaves_no_backup_to_undo(cli, isolated_home: Path, monkeypatch) -> None:
    path = config(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text('model = "mine"\n')

    real_replace = os.replace

    def full_disk(src, dst):  # type: ignore[no-untyped-def]
        if Path(dst) == path:  # the backup is saved; only the replace of the file fails
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    # a context of its own: `monkeypatch.undo()` would also undo isolated_home's env
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", full_disk)
        result = cli("config", "codex", "--provider", "gw", "--base-url", "https://gw.example/api")

    assert result.exit_code == 1 and "No space left" in result.stderr
    assert path.read_text() == 'model = "mine"\n'
    assert backups.list_backups("codex") == []
    assert not list((isolated_home / ".pdnotes" / "backups" / "codex").glob("*"))
    undo = cli("config", "undo", "--client", "codex")
    assert undo.exit_code == 0 and "nothing to undo: no codex backup" in undo.stdout
    assert path.read_text() == 'model = "mine"\n'


def test_a_killed_write_is_settled_by_the_next_run(cli, isolated_home: Path) -> None:
    """A pending backup whose write never happened is dropped; one whose write happened is
    kept, so undo walks back through exactly the writes that were made."""
    path = config(isolated_home)
    path.parent.mkdir(parents=True)
    path.write_text('model = "a"\n')
    with fileio.locked(path):  # died before the replace
        backups.save("codex", path, pending=backups.state_digest(b'model = "never"\n'))
    assert backups.list_backups("codex") == []
    with fileio.locked(path):  # died after the replace, before the commit
        backups.save("codex", path, pending=backups.state_digest(b'model = "b"\n'))
        path.write_text('model = "b"\n')

    assert cli("config", "codex", "--provider", "gw", "--base-url", "https://x.example",
               "--model", "c").exit_code == 0  # fmt: skip

    saved = [b.data_path.read_text() for b in backups.list_backups("codex")]
    assert saved == ['model = "a"\n', 'model = "b"\n']
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_text() == 'model = "b"\n'
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.read_text() == 'model = "a"\n'


@contextlib.contextmanager
def _another_pdnotes_holding(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process holding `fileio.locked(path)` until the block ends (killed then)."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from notes_cli import fileio\n"
         "with fileio.locked(Path(sys.argv[1])):\n"
         "    print('held', flush=True); time.sleep(30)", str(path)],
        stdout=subprocess.PIPE, text=True, env=os.environ.copy(), start_new_session=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        holder.stdout.close()  # type: ignore[union-attr]


def test_a_held_lock_gives_a_clear_error_after_the_wait(
    cli, isolated_home: Path, monkeypatch
) -> None:
    path = config(isolated_home)
    with _another_pdnotes_holding(path) as holder:
        monkeypatch.setenv("PDNOTES_LOCK_WAIT", "0.3")
        started = time.monotonic()
        result = cli("config", "codex", "--provider", "gw", "--base-url", "https://x.example",
                     "--model", "m")  # fmt: skip
        waited = time.monotonic() - started

    assert result.exit_code == 1
    assert f"another pdnotes is writing {path} (pid {holder.pid})" in result.stderr
    assert "nothing was changed" in result.stderr and waited < 10
    assert not path.exists() and backups.list_backups("codex") == []
    # the kernel dropped the dead holder's lock:
    assert cli("config", "codex", "--provider", "gw", "--base-url", "https://x.example",
               "--model", "m").exit_code == 0  # fmt: skip


def test_temp_files_of_a_killed_backup_write_are_removed_by_the_next_run(
    cli, isolated_home: Path, monkeypatch
) -> None:
    """A SIGKILL while a backup is written leaves a 0600 temp beside it, holding a copy of the
    settings (token included); the next run holding the folder's lock removes it."""
    monkeypatch.setenv("GW_TOKEN", "sk-ant-LEFTBYAKILLEDBACKUP0123")
    settings = isolated_home / ".claude" / "settings.json"
    write = ("config", "claude", "--base-url", "https://gw.example/api",
             "--write-token-from-env", "GW_TOKEN")  # fmt: skip
    assert cli(*write, "--model", "a").exit_code == 0
    first = settings.read_bytes()
    assert b"sk-ant-LEFTBYAKILLEDBACKUP0123" in first
    folder = isolated_home / ".pdnotes" / "backups" / "claude"
    stale = [
        folder / ".20260101T000000000000Z-00-4242.bak.k1ll3d.pdnotes-tmp",
        folder / ".20260101T000000000000Z-00-4242.json.k1ll3d.pdnotes-tmp",
        folder / "undone" / ".20260101T000000000001Z-00-4242.bak.k1ll3d.pdnotes-tmp",
    ]
    (folder / "undone").mkdir()
    for temp in stale:
        temp.write_bytes(first)
        temp.chmod(0o600)
    kept = [folder / "my-notes.txt", folder / ".not-a-temp"]
    for other in kept:
        other.write_text("mine")
    backed_up = sorted(p.name for p in folder.glob("*.json"))

    assert cli(*write, "--model", "b").exit_code == 0
    assert not stale[0].exists() and not stale[1].exists()
    assert cli("config", "undo", "--client", "claude").exit_code == 0
    assert not stale[2].exists()

    assert not [p for p in folder.rglob("*.pdnotes-tmp")]
    assert all(other.read_text() == "mine" for other in kept)
    assert set(backed_up) <= {p.name for p in folder.glob("*.json")}
    assert settings.read_bytes() == first


def test_a_backup_write_in_progress_keeps_its_temp_file(
    cli, isolated_home: Path, monkeypatch
) -> None:
    """The temps are judged stale only under the folder's lock, which every backup write
    holds: while another pdnotes holds it, its temp is left alone (the run waits, then fails
    with nothing changed)."""
    folder = isolated_home / ".pdnotes" / "backups" / "codex"
    folder.mkdir(parents=True)
    live = folder / ".20260101T000000000000Z-00-4242.bak.l1v3.pdnotes-tmp"
    live.write_text("being written")
    with _another_pdnotes_holding(folder):
        monkeypatch.setenv("PDNOTES_LOCK_WAIT", "0.3")
        result = cli("config", "codex", "--provider", "gw", "--base-url", "https://x.example",
                     "--model", "m")  # fmt: skip

    assert result.exit_code == 1 and "nothing was changed" in result.stderr
    assert live.read_text() == "being written"
    assert not config(isolated_home).exists()
