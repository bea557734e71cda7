"""RECORD, the one reader: a wheel's (and an installed dist-info's) list of files and hashes.

Every row is `path,alg=urlsafe-b64-digest,size`, CSV as the wheel spec says. Both the release
cache (checking wheels and the files read from them) and drift (an installed tree against its
dist-info) read RECORD here, so the two can never disagree about a row.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from sgpatch.errors import SgpatchError

__all__ = ["Row", "digest", "hex_sha256", "parse", "rows"]


@dataclass(frozen=True, slots=True)
class Row:
    """One RECORD line: a path, its hash ("alg=digest", "" for RECORD itself) and size."""

    path: str
    hash: str
    size: str


def rows(text: str) -> list[list[str]]:
    """The CSV rows of `text`, as `csv.reader` reads them (blank lines left out). Without a
    quote or a CR anywhere (what pip and SGLang's wheels write) a row is its line split on
    commas, which is what csv makes of it, without importing or running csv."""
    if '"' not in text and "\r" not in text and "\x00" not in text:
        return [line.split(",") for line in text.split("\n") if line]
    import csv
    import io

    return [row for row in csv.reader(io.StringIO(text, newline="")) if row]


def parse(text: str, where: str) -> dict[str, Row]:
    """path -> Row for every line of a RECORD; a line without three fields is an error that
    names `where` (the wheel or dist-info) and the line."""
    out: dict[str, Row] = {}
    for n, row in enumerate(rows(text), 1):
        if len(row) != 3:
            raise SgpatchError(f"{where}: RECORD line {n} has {len(row)} fields, expected 3")
        out[row[0]] = Row(row[0], row[1], row[2])
    return out


def digest(alg: str, data: bytes) -> str:
    """`data`'s hash the way RECORD spells it after `alg=`: urlsafe base64, no padding.
    (hashlib is imported here: `status` reads RECORD but never hashes with it.)"""
    import hashlib

    return base64.urlsafe_b64encode(hashlib.new(alg, data).digest()).rstrip(b"=").decode("ascii")


def hex_sha256(record_hash: str) -> str | None:
    """RECORD's `sha256=<urlsafe b64>` as `hashlib.sha256(...).hexdigest()` gives it; None for
    no hash, another algorithm or a digest that does not decode."""
    alg, _, b64 = record_hash.partition("=")
    if alg != "sha256" or not b64:
        return None
    try:
        raw = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
    except (ValueError, TypeError):
        return None
    return raw.hex()
