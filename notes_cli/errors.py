"""The one exception tree of pdnotes. Exit codes belong to the class; `cli.main` maps them.

    PdnotesError                 exit 1  the command ran and found a problem
    ├── UsageError               exit 2  bad flags or arguments
    ├── InputError               exit 2  an input file is missing, unreadable or unparseable
    │   ├── ConfigParseError             a client config (TOML / JSON) does not parse
    │   ├── KitError                     a note kit is malformed
    │   └── AnswerTooLarge               a model's answer is too large to parse (notes.tables)
    ├── ConfigWriteError         exit 1  a client file could not be written (nothing changed)
    ├── UnitEditedError          exit 1  a service file holds changes pdnotes did not write
    │                                    (bridge.service)
    ├── NoteRefused              exit 1  the model refused to write the note (notes.generate)
    ├── NoteIncomplete           exit 1  no complete table after the repairs (notes.generate)
    └── GatewayError             exit 1  an HTTP call to a gateway failed (see gateway.errors)
        └── FetchError           exit 2  a source URL could not be fetched (gateway.fetch)

The classes that belong to one area live in that area's module (named in brackets) and derive
from these.

Lower-level exceptions (OSError, tomlkit / json errors, httpx errors) are re-raised as one of
these, `from exc`, at exactly one boundary: the module that owns the outside thing.

Nothing to do is not a problem: `config undo` without a backup says so and exits 0, so it has
no exception here.
"""

from __future__ import annotations

from typing import Any


class PdnotesError(Exception):
    """Base class; `exit_code` is what the CLI exits with. `fix` tells the user what to do."""

    exit_code = 1

    def __init__(
        self, message: str, *, fix: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.details = details  # more for the `--json` error document (e.g. the answers seen)

    def __str__(self) -> str:
        return self.message


class UsageError(PdnotesError):
    exit_code = 2


class InputError(PdnotesError):
    exit_code = 2


class ConfigParseError(InputError):
    """A client file does not parse; carries the location so the message can point at it."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        line: int | None = None,
        column: int | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message, fix=fix)
        self.path = path
        self.line = line
        self.column = column


class KitError(InputError):
    pass


class ConfigWriteError(PdnotesError):
    pass


class GatewayError(PdnotesError):
    """Base for HTTP failures; the concrete kinds live in notes_cli.gateway.errors."""
