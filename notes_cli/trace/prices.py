"""The price table `pdnotes trace cost` reads: gateway models in US$ per million tokens (input,
cached input, output) and chips in US$ per chip-hour, each row with the page it was read from
and the date. The bundled default is templates/prices.toml; `--prices FILE` replaces it whole.

Read strictly: a size cap, TOML, every row checked (a price is a finite number from 0 to
MAX_PRICE, source and date are non-empty strings), errors name the file and the row (exit 2).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from notes_cli.errors import InputError

MAX_PRICES_BYTES = 256 * 1024  # a table of a thousand rows fits many times over
MAX_PRICE = 1_000_000.0  # US$ per million tokens or per chip-hour: no real price is near it
_FIX = "see the bundled table (docs/trace.md, 'Price it') for the layout"


@dataclass(frozen=True)
class GatewayPrice:
    """A hosted model's list prices, US$ per million tokens."""

    model: str
    input: float
    cached_input: float
    output: float
    source: str
    date: str

    def cost(self, fresh_input: int, cached_input: int, output: int) -> float:
        """US$ for these token counts."""
        return (
            fresh_input * self.input + cached_input * self.cached_input + output * self.output
        ) / 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "input_per_mtok": self.input,
            "cached_input_per_mtok": self.cached_input,
            "output_per_mtok": self.output,
            "source": self.source,
            "date": self.date,
        }


@dataclass(frozen=True)
class ChipPrice:
    chip: str
    per_hour: float
    source: str
    date: str


@dataclass(frozen=True)
class PriceTable:
    path: Path
    gateway: dict[str, GatewayPrice]
    chips: dict[str, ChipPrice]


def default_path() -> Path:
    from notes_cli.resources import template_path

    return template_path("prices.toml")


def load_prices(path: Path | None = None) -> PriceTable:
    """The table at `path` (default: the bundled one)."""
    from notes_cli.fileio import decode_text, read_document

    path = path or default_path()
    data = read_document(path, max_bytes=MAX_PRICES_BYTES, what="price table")
    try:
        doc = tomllib.loads(decode_text(path, data))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"price table {path} is not valid TOML: {exc}", fix=_FIX) from exc
    except (RecursionError, ValueError) as exc:  # nesting or integer digits past any real table
        raise InputError(f"price table {path} is not a price table ({exc})", fix=_FIX) from exc
    unknown = sorted(set(doc) - {"gateway", "chips"})
    if unknown:
        raise InputError(f"price table {path}: unknown table(s) {', '.join(unknown)}", fix=_FIX)
    gateway = {
        name: _gateway_row(name, row, f"{path}: [gateway.{name}]")
        for name, row in _rows(doc, "gateway", path, {*_GATEWAY_KEYS, "source", "date"})
    }
    chips = {
        name: ChipPrice(
            name,
            _price(row, "price_per_hour", f"{path}: [chips.{name}]"),
            *_provenance(row, f"{path}: [chips.{name}]"),
        )
        for name, row in _rows(doc, "chips", path, {"price_per_hour", "source", "date"})
    }
    if not gateway:
        raise InputError(f"price table {path} has no [gateway.NAME] row", fix=_FIX)
    return PriceTable(path, gateway, chips)


_GATEWAY_KEYS = ("input", "cached_input", "output")


def _gateway_row(name: str, row: dict[str, Any], where: str) -> GatewayPrice:
    fresh, cached, output = (_price(row, key, where) for key in _GATEWAY_KEYS)
    return GatewayPrice(name, fresh, cached, output, *_provenance(row, where))


def _rows(
    doc: dict[str, Any], kind: str, path: Path, keys: set[str]
) -> list[tuple[str, dict[str, Any]]]:
    section = doc.get(kind, {})
    if not isinstance(section, dict):
        raise InputError(f"price table {path}: [{kind}] must be a table", fix=_FIX)
    rows = []
    for name, row in section.items():
        if not isinstance(row, dict):
            raise InputError(f"price table {path}: [{kind}.{name}] must be a table", fix=_FIX)
        extra = sorted(set(row) - keys)
        if extra:
            raise InputError(
                f"price table {path}: [{kind}.{name}] has unknown key(s) {', '.join(extra)}",
                fix=f"keys: {', '.join(sorted(keys))}",
            )
        rows.append((name, row))
    return rows


def _price(row: dict[str, Any], key: str, where: str) -> float:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where}: {key} must be a number (US$), got {value!r}", fix=_FIX)
    if not (math.isfinite(value) and 0 <= value <= MAX_PRICE):
        raise InputError(f"{where}: {key} must be from 0 to {MAX_PRICE:,.0f}, got {value!r}")
    return float(value)


def _provenance(row: dict[str, Any], where: str) -> tuple[str, str]:
    """(source, date): where the price was read, and when; both required."""
    out = []
    for key in ("source", "date"):
        value = row.get(key)
        if isinstance(value, date):  # a bare TOML date (date = 2026-04-27)
            value = value.isoformat()
        if isinstance(value, str) and value.strip():
            out.append(value.strip())
            continue
        what = "the page the price was read from" if key == "source" else "when it was read"
        raise InputError(
            f"{where}: {key} must name {what}",
            fix="every price names its source and date, so a reader can check it",
        )
    return out[0], out[1]
