"""Whether git tracks a file: a committed token would be published."""

from __future__ import annotations

from pathlib import Path


def tracked_by_git(path: Path) -> bool:
    """True when git tracks `path` or, for a symlink, the file it points to (a settings.json
    linked into a dotfiles repo is committed with that repo). Bounded to 5 s, quiet; False
    when git is absent."""
    import subprocess

    try:
        path = path.resolve()
    except (OSError, RuntimeError):
        return False  # a symlink loop: not a file anyone commits
    if not path.parent.is_dir():
        return False
    try:
        result = subprocess.run(
            ["git", "ls-files", "--error-unmatch", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=5,
            start_new_session=True,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0
