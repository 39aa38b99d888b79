"""Only regular files are read or replaced (issue 11.1): a client file that is — or links to — a
device, FIFO, socket or folder is refused with exit 2 and a message naming the path and what it
is, by every command that reads or writes it, and nothing is touched. Doctor reports it as a
`file-unreadable` finding (exit 1) rather than stopping, so the other client is still checked.

Device nodes are private ones made with mknod under tmp_path: a test must never point at the
real /dev/null, because a pdnotes with this bug would replace it."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

KINDS = ("fifo", "socket", "device", "folder")
WRITE = {
    "codex": ["config", "codex", "--provider", "gw", "--base-url", "https://gw.example/api",
              "--model", "m"],
    "claude": ["config", "claude", "--base-url", "https://gw.example", "--model", "m"],
}  # fmt: skip


def client_path(home: Path, client: str) -> Path:
    return home / (".codex/config.toml" if client == "codex" else ".claude/settings.json")


@pytest.fixture
def make_node(tmp_path: Path) -> Iterator[Callable[[Path, str], Path]]:
    """Make `path` a symlink to a node of `kind` in tmp_path (a direct node for folders)."""
    sockets: list[socket.socket] = []

    def make(path: Path, kind: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        node = tmp_path / f"node-{kind}-{path.name}"
        if kind == "folder":
            path.mkdir()
            return path
        if kind == "fifo":
            os.mkfifo(node)
        elif kind == "socket":
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(node))
            sockets.append(server)
        else:
            try:
                os.mknod(node, 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # a private /dev/null
            except PermissionError:
                pytest.skip("creating a device node needs root (CAP_MKNOD)")
        path.symlink_to(node)
        return node

    yield make
    for server in sockets:
        server.close()


def kind_of(node: Path) -> int:
    return stat.S_IFMT(node.stat().st_mode)


def run(args: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """A real process, so a FIFO that blocks `open` makes the test fail instead of hang."""
    return subprocess.run(
        [sys.executable, "-m", "notes_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("client", ["codex", "claude"])
def test_config_write_refuses_a_non_regular_file_and_touches_nothing(
    isolated_home: Path, make_node: Callable[[Path, str], Path], client: str, kind: str
) -> None:
    path = client_path(isolated_home, client)
    node = make_node(path, kind)
    before = kind_of(node)

    result = run(WRITE[client])

    assert result.returncode == 2, result.stderr
    assert str(path) in result.stderr and "Traceback" not in result.stderr
    what = {"fifo": "FIFO", "socket": "socket", "device": "character device", "folder": "folder"}
    assert what[kind] in result.stderr
    assert kind_of(node) == before
    assert kind == "folder" or path.is_symlink()
    assert not (isolated_home / ".pdnotes" / "backups").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_config_show_and_doctor_refuse_without_hanging(
    isolated_home: Path, make_node: Callable[[Path, str], Path], kind: str
) -> None:
    codex = client_path(isolated_home, "codex")
    claude = client_path(isolated_home, "claude")
    make_node(codex, kind)
    make_node(claude, kind)

    show = run(["config", "show"])
    doctor = run(["doctor", "--offline", "--json"])

    assert show.returncode == 2 and str(codex) in show.stderr, show.stderr
    assert "Traceback" not in show.stderr + doctor.stderr
    assert doctor.returncode == 1, doctor.stderr
    findings = json.loads(doctor.stdout)["findings"]
    unreadable = {f["file"] for f in findings if f["id"] == "file-unreadable"}
    assert unreadable == {str(codex), str(claude)}


@pytest.mark.parametrize("kind", KINDS)
def test_undo_refuses_when_the_file_became_a_non_regular_file(
    isolated_home: Path, make_node: Callable[[Path, str], Path], kind: str
) -> None:
    path = client_path(isolated_home, "codex")
    assert run(WRITE["codex"]).returncode == 0
    path.unlink()
    node = make_node(path, kind)
    before = kind_of(node)
    backups = sorted((isolated_home / ".pdnotes" / "backups" / "codex").rglob("*"))

    result = run(["config", "undo", "--client", "codex"])

    assert result.returncode == 2, result.stderr
    assert str(path) in result.stderr and "Traceback" not in result.stderr
    assert kind_of(node) == before
    assert sorted((isolated_home / ".pdnotes" / "backups" / "codex").rglob("*")) == backups


def test_writing_through_a_symlink_to_a_regular_file_still_works(
    cli, isolated_home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "dotfiles" / "config.toml"
    target.parent.mkdir()
    target.write_text('model = "old"\n')
    path = client_path(isolated_home, "codex")
    path.parent.mkdir(parents=True)
    path.symlink_to(target)

    assert cli(*WRITE["codex"]).exit_code == 0

    assert path.is_symlink() and 'model = "m"' in target.read_text()
    assert cli("config", "undo", "--client", "codex").exit_code == 0
    assert path.is_symlink() and target.read_text() == 'model = "old"\n'


def test_a_fifo_swapped_in_after_the_stat_does_not_block_the_read(tmp_path: Path) -> None:
    """The open itself is non-blocking: even if the stat saw a regular file, a FIFO put in its
    place before the open is refused at once (fstat), not waited on."""
    from notes_cli import fileio
    from notes_cli.errors import InputError

    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    real_stat = os.stat

    def stat_says_regular(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        info = real_stat(name, *args, **kwargs)
        if Path(name) == fifo:
            fields = list(info)
            fields[0] = stat.S_IFREG | 0o644
            return os.stat_result(fields)
        return info

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "stat", stat_says_regular)
        with pytest.raises(InputError, match="FIFO"):
            fileio.read_bytes(fifo)
