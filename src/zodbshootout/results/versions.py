"""The record of a ``zodbshootout versions`` run, and its file.

A versions file holds each variant (its requirements, Python, installer,
environment, and every package the environment had installed, read from
the environment itself) with the run its rounds add up to — an ordinary
result document, so everything ``compare`` does with two saved runs it
does with two variants — and each round's start and finish, which show the
interleaving.  ``compare VERSIONS.json`` compares every variant with the
first; ``FILE#NAME`` picks one variant of a file.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.inputs import MAX_RESULT_BYTES, read_bytes
from zodbshootout.outputfile import write_atomically
from zodbshootout.results import file as resultfile
from zodbshootout.results.record import RunResult

#: What the ``format`` key of a versions file says.
FORMAT_NAME = "zodbshootout-versions"
#: The layout's version; its history:
#:   1 (round 4): ``variants`` (name, requirements, python, installer,
#:     environment, packages, result: a result document) and ``rounds``.
FORMAT_VERSION = 1
#: What picks one variant of a file: ``versions.json#ZEO==6.1``.
VARIANT_SEPARATOR = "#"


@dataclass(frozen=True)
class VariantRecord:
    """One variant: what it installed, where, and what its rounds measured."""

    name: str
    requirements: list[str]
    #: ``requested`` (what --python said, '' for the default), ``executable``,
    #: ``version``, ``implementation``.
    python: dict[str, str]
    #: The installer that built the environment, with its version ("uv 0.9.9").
    installer: str
    #: ``key``, ``path``, ``built`` (by this run), ``build_seconds`` (or null).
    environment: dict[str, Any]
    #: Every distribution installed in the environment -> its version.
    packages: dict[str, str]
    result: RunResult


@dataclass(frozen=True)
class RoundRecord:
    """One run of the tool in one variant's environment: when, and how it ended."""

    round: int  # 1-based
    position: int  # 1-based place in its round
    variant: str
    started: float  # seconds since the epoch
    finished: float
    exit_code: int


@dataclass
class VersionsResult:
    """A versions run: the variants, and the rounds that measured them in turn."""

    #: The tool's arguments each round ran with (the result file option aside).
    command: list[str]
    order: str
    seed: int | None
    rounds_planned: int
    variants: list[VariantRecord] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0
    interrupted: bool = False

    def variant(self, name: str) -> VariantRecord:
        for record in self.variants:
            if record.name == name:
                return record
        known = ", ".join(repr(v.name) for v in self.variants)
        raise UsageError(f"no variant {name!r} (the file has {known})")


def differing_packages(variants: list[VariantRecord]) -> list[tuple[str, list[str | None]]]:
    """(package, its version in each variant) for each package the variants disagree on."""
    names: dict[str, str] = {}
    for record in variants:
        names.update((name.lower(), name) for name in record.packages)
    rows = []
    for key in sorted(names):
        versions = [
            next((v for n, v in record.packages.items() if n.lower() == key), None)
            for record in variants
        ]
        if len(set(versions)) > 1:
            rows.append((names[key], versions))
    return rows


# --- The file ------------------------------------------------------------------


def to_document(versions: VersionsResult) -> dict[str, Any]:
    """*versions* as JSON data; each variant's run as an ordinary result document."""
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "command": list(versions.command),
        "order": versions.order,
        "seed": versions.seed,
        "rounds_planned": versions.rounds_planned,
        "started": versions.started,
        "finished": versions.finished,
        "interrupted": versions.interrupted,
        "variants": [
            {
                "name": v.name,
                "requirements": list(v.requirements),
                "python": dict(v.python),
                "installer": v.installer,
                "environment": dict(v.environment),
                "packages": dict(v.packages),
                "result": resultfile.to_document(v.result),
            }
            for v in versions.variants
        ],
        "rounds": [vars(r) for r in versions.rounds],
    }


def from_document(document: Any, source: str = "versions file") -> VersionsResult:
    """The VersionsResult a document describes; a UsageError says what is wrong."""
    if not is_versions_document(document):
        raise UsageError(f"{source} is not a zodbshootout versions file")
    if document.get("version") != FORMAT_VERSION:
        raise UsageError(
            f"{source} has versions format {document.get('version')!r}; this zodbshootout "
            f"reads version {FORMAT_VERSION} (upgrade zodbshootout)"
        )
    try:
        resultfile.check_values({k: v for k, v in document.items() if k != "variants"})
        variants = [
            _variant(row, f"{source}: variant {index + 1}")
            for index, row in enumerate(document["variants"])
        ]
        rounds = [RoundRecord(**{k: row[k] for k in _ROUND_FIELDS}) for row in document["rounds"]]
        result = VersionsResult(
            command=[str(word) for word in document["command"]],
            order=str(document["order"]),
            seed=document["seed"],
            rounds_planned=int(document["rounds_planned"]),
            variants=variants,
            rounds=rounds,
            started=float(document["started"]),
            finished=float(document["finished"]),
            interrupted=bool(document["interrupted"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UsageError(f"{source} is damaged: {type(e).__name__}: {e}") from None
    _check(result)
    return result


_ROUND_FIELDS = ("round", "position", "variant", "started", "finished", "exit_code")


def _variant(row: dict[str, Any], source: str) -> VariantRecord:
    return VariantRecord(
        name=str(row["name"]),
        requirements=[str(r) for r in row["requirements"]],
        python={str(k): str(v) for k, v in row["python"].items()},
        installer=str(row["installer"]),
        environment=dict(row["environment"]),
        packages={str(k): str(v) for k, v in row["packages"].items()},
        result=resultfile.from_document(row["result"], source),
    )


def _check(result: VersionsResult) -> None:
    names = [v.name for v in result.variants]
    if len(set(names)) != len(names) or not names:
        raise UsageError("a versions file's variants must have different names")
    for record in result.rounds:
        if record.variant not in names:
            raise UsageError(f"round {record.round} names no variant of the file")
        if not (math.isfinite(record.started) and record.started <= record.finished):
            raise UsageError(f"round {record.round} has impossible times")


def is_versions_document(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT_NAME


def save(versions: VersionsResult, path: str) -> None:
    """Write the file atomically (``-``: stdout)."""
    text = json.dumps(to_document(versions), indent=1, ensure_ascii=False, default=str)
    write_atomically(path, text + "\n")


def _read_document(path: str) -> Any:
    data = read_bytes(path, "result file", MAX_RESULT_BYTES)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None  # resultfile.load says what is wrong with it


def load(path: str) -> VersionsResult:
    """Read a versions file; anything else is a UsageError."""
    return from_document(_read_document(path), path)


def split_variant(path: str) -> tuple[str, str | None]:
    """``FILE#NAME`` -> (FILE, NAME); a path that exists as written is a whole file."""
    if VARIANT_SEPARATOR not in path or os.path.exists(path):
        return path, None
    file_path, _, name = path.rpartition(VARIANT_SEPARATOR)
    return file_path, name


def load_runs(path: str) -> list[tuple[str | None, RunResult]]:
    """The runs a path names: a result file's run (unnamed), every variant of a versions
    file, or with ``#NAME`` the one variant so named."""
    file_path, name = split_variant(path)
    document = _read_document(file_path)
    if not is_versions_document(document):
        if name is not None:
            raise UsageError(f"{file_path} is not a versions file: it has no variant {name!r}")
        return [(None, resultfile.load(file_path))]
    versions = from_document(document, file_path)
    if name is not None:
        return [(name, versions.variant(name).result)]
    return [(v.name, v.result) for v in versions.variants]
