"""The package list and the package data, found rather than written out.

A client is one folder, notes_cli/clients/<name>/ (issue 38): adding one must not touch a
packaging file. Everything else about the package is declared in pyproject.toml. The lists are
computed here because pyproject's declarative `find` cannot see notes_cli.prompts and
notes_cli.templates, which map to root folders (data, not code).
"""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
DATA = {"notes_cli.prompts": "prompts", "notes_cli.templates": "templates"}


def data_packages(package: str, folder: str) -> list[str]:
    """A data folder and each subfolder whose name could be a package: setuptools warns that
    such a folder "would be ignored" unless it is named a package itself."""
    root = ROOT / folder
    names = [package]
    for sub in sorted(p for p in root.rglob("*") if p.is_dir()):
        parts = sub.relative_to(root).parts
        if all(part.isidentifier() for part in parts):
            names.append(".".join((package, *parts)))
    return names


clients = sorted(p.parent for p in ROOT.glob("notes_cli/clients/*/client.py"))
client_packages = [f"notes_cli.clients.{c.name}" for c in clients]
shapes = [f"notes_cli.clients.{c.name}.shapes" for c in clients if (c / "shapes").is_dir()]
packages = find_packages(include=["notes_cli", "notes_cli.*"]) + shapes
for package, folder in DATA.items():
    packages += data_packages(package, folder)

setup(
    packages=packages,
    package_data={
        # data packages: everything in them ships
        "notes_cli.prompts": ["**/*"],
        **{p: ["*"] for p in packages if p.startswith("notes_cli.templates")},
        **{p: ["findings.toml"] for p in client_packages},
        **{s: ["*.json", "*.toml"] for s in shapes},
    },
)
