"""Save a run to a JSON file, and load it back, so that it can be shown and compared later.

The file holds every worker's raw duration of every repetition (not only the
derived rates), the failures and notes, and the run's metadata (environment,
options, configuration with passwords redacted, start and end times), so
that ``show``, ``compare``, ``plot`` and ``export`` can recompute anything.

:func:`save` is atomic (see :mod:`zodbshootout.outputfile`): a reader, or a
run killed mid-write, never sees half a document.  The runner calls it after
every database.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterator
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.inputs import MAX_RESULT_BYTES, read_bytes
from zodbshootout.outputfile import check_output_target, write_atomically
from zodbshootout.results.mix import MixRecord
from zodbshootout.results.record import Failure, Measurement, PhaseTiming, RunResult

#: What the ``format`` key of every result file says.
FORMAT_NAME = "zodbshootout-result"

#: The version of the document layout.  Bump it when a reader of the previous
#: version would misread a new file; :func:`from_document` reads every version
#: listed here.
#:
#: History:
#:   1 (zodbshootout 1.0): first version.  Top-level keys ``format``,
#:     ``version``, ``databases``, ``object_counts``, ``concurrencies``,
#:     ``phases``, ``repetitions``, ``interrupted``, ``metadata``, ``notes``,
#:     ``failures`` (objects) and ``measurements`` (objects, one per worker,
#:     phase and repetition; ``seconds`` is the raw duration).  Fields added
#:     to the records with a default (e.g. ``conflicts``, ``object_growth``)
#:     are additions to version 1: older readers ignore them, newer readers
#:     default them.
#:   2 (round 2): ``refused``, ``setup_failed`` (database names) and ``signal``
#:     (the interrupting signal's name, or null) are top-level keys; version 1
#:     kept them in ``metadata``, from where a version 1 file is read.
#:   3 (round 2, stable numbers): a measurement may be a warm-up
#:     (``warmup: true``, repetition 0, never in the statistics) and records
#:     ``loops``, the repetitions of its work inside the sample (``seconds``
#:     covers all of them), and ``statements`` (RelStorage's requests to its
#:     database).  A version 2 reader would count warm-ups and read looped
#:     samples as one slow repetition; earlier files read as warmup false, loops 1.
#:   4 (round 3, mix mode): ``mix`` is a list of records, one per database of
#:     a ``zodbshootout mix`` run (workload, intervals, and per operation its
#:     counts and latency histograms encoded as HdrHistogram strings), with
#:     ``phases`` empty and ``metadata.mix`` the run's options.  A version 3
#:     reader would refuse the empty phases; earlier files read as ``mix: []``.
#:   (additions to 4: a measurement may carry ``operations`` and ``latency``,
#:     the counts and HdrHistograms a phase recorded, and ``work``, --work's
#:     counts of a warm-up's timed region; older readers ignore them.  A mix
#:     record may carry ``workers``, each worker's host, committed transactions,
#:     changes and latencies, and with ``mix --work`` ``work`` (the counting
#:     pass's counts per operation and cache state), ``work_error`` and
#:     ``work_increments``; older records read as none.  ``maintenance``: a
#:     ``zodbshootout maintain`` run's records, one per database, size and
#:     operation, with ``phases`` ["maintain"] and ``metadata.maintain`` its
#:     options; an older reader shows such a file as a table of failed cells.)
FORMAT_VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)

#: Keys version 1 kept in ``metadata`` that are RunResult fields since version 2.
_MOVED_FROM_METADATA = ("refused", "setup_failed", "signal")


def to_document(result: RunResult) -> dict[str, Any]:
    """*result* as JSON-compatible data (dicts, lists, numbers, strings).

    Every dataclass field is written, so a field added to the result
    records later is saved without touching this module.
    """
    document: dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION}
    for item in dataclasses.fields(RunResult):
        value = getattr(result, item.name)
        if item.name == "measurements":
            value = [_measurement_row(m) for m in value]
        elif item.name == "failures":
            value = [{f.name: _plain_list(getattr(x, f.name)) for f in _FAILURE} for x in value]
        document[item.name] = _plain_list(value)
    return document


_TIMING = dataclasses.fields(PhaseTiming)
_FAILURE = dataclasses.fields(Failure)
_PLACEMENT = ("database", "concurrency", "object_count", "repetition")


def _measurement_row(measurement: Measurement) -> dict[str, Any]:
    """One flat row per worker, phase and repetition: where, then the raw timing."""
    row = {name: getattr(measurement, name) for name in _PLACEMENT}
    if measurement.warmup:
        row["warmup"] = True
    row.update((f.name, getattr(measurement.timing, f.name)) for f in _TIMING)
    return row


def _plain_list(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def from_document(document: Any, source: str = "result file") -> RunResult:
    """The RunResult a document describes; a UsageError names what is wrong with it.

    Keys a newer writer added with a default are ignored; missing optional
    ones take their defaults.
    """
    if isinstance(document, dict) and document.get("format") == "zodbshootout-versions":
        raise UsageError(
            f"{source} is a versions file (zodbshootout versions -o): only compare reads it "
            f"(compare {source}, or one variant as {source}#NAME)"
        )
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise UsageError(f"{source} is not a zodbshootout result file")
    version = document.get("version")
    if version not in READABLE_VERSIONS:
        raise UsageError(
            f"{source} has result format version {version!r}; this zodbshootout reads "
            f"version {', '.join(map(str, READABLE_VERSIONS))} (upgrade zodbshootout)"
        )
    if version == 1:
        document = _upgrade_version_1(document)
    try:
        check_values(document)
        measurements = [
            Measurement(
                **{name: row[name] for name in _PLACEMENT},
                warmup=bool(row.get("warmup", False)),
                timing=PhaseTiming(**{f.name: row[f.name] for f in _TIMING if f.name in row}),
            )
            for row in document["measurements"]
        ]
        failures = []
        for row in document["failures"]:
            values: dict[str, Any] = {f.name: row[f.name] for f in _FAILURE if f.name in row}
            values["phases"] = tuple(values["phases"])
            failures.append(Failure(**values))
        fields: dict[str, Any] = {
            item.name: document[item.name]
            for item in dataclasses.fields(RunResult)
            if item.name in document
        }
        fields.update(measurements=measurements, failures=failures)
        result = RunResult(**fields)
        _check_result(result)
        return result
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{source} is damaged: {type(e).__name__}: {e}") from None


def _check_result(result: RunResult) -> None:
    """A ValueError naming the first value of the wrong type or out of range.

    The renderers and statistics trust their input; a file edited by hand
    (or by another program) must be refused here, in one line, instead.
    """
    _check_fields(result, "the run")
    for index, measurement in enumerate(result.measurements):
        _check_fields(measurement, f"measurement {index + 1}")
        _check_fields(measurement.timing, f"measurement {index + 1}")
        timing = measurement.timing
        if not (math.isfinite(timing.seconds) and timing.seconds >= 0) or timing.objects < 1:
            raise ValueError(f"measurement {index + 1} has an impossible duration or count")
        if timing.loops < 1 or timing.worker < 0 or measurement.repetition < 0:
            raise ValueError(f"measurement {index + 1}: loops, worker or repetition out of range")
        if measurement.concurrency < 1 or measurement.object_count < 1:
            raise ValueError(f"measurement {index + 1}: concurrency or object count below 1")
    for index, failure in enumerate(result.failures):
        _check_fields(failure, f"failure {index + 1}")
    _check_shape(result)
    _check_metadata(result.metadata)
    for index, record in enumerate(result.mix):
        _check_mix_record(record, index + 1)
    for index, record in enumerate(result.maintenance):
        _check_maintenance_record(record, index + 1)


#: The largest magnitude of a number in a result file: far beyond any count,
#: byte size or timestamp, and small enough that no product overflows.
MAX_NUMBER = 10**18
#: The longest text anywhere in a result file (the configuration it records
#: is at most inputs.MAX_CONFIG_BYTES) and the longest name or label, which
#: tables, charts and history print again and again.
MAX_TEXT_CHARS = 2 << 20
MAX_NAME_CHARS = 200
#: The longest note or failure reason.
MAX_REASON_CHARS = 10_000


def check_values(document: Any) -> None:
    """A ValueError naming the first value no saved run can hold, wherever it is.

    Every number must be finite and within MAX_NUMBER, every string real
    text (no lone surrogate) within MAX_TEXT_CHARS; names, labels, notes
    and reasons are bounded more tightly (see _check_names).
    """
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                name = _field_name(key)
                _check_text(key, f"{where}.{name:.40}" if where else f"{name:.40}")
                stack.append((f"{where}.{name}" if where else name, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", item) for index, item in enumerate(value))
        elif isinstance(value, str):
            _check_text(value, where)
        elif _out_of_range(value):
            raise ValueError(f"{where[:80]} is not a finite number within ±10^18")
    _check_names(document)


def _field_name(key: Any) -> str:
    """*key* as a message names it: quoted when it holds a line break or other control."""
    text = str(key)
    return text if text.isprintable() else repr(text)


def _out_of_range(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > MAX_NUMBER  # no float() of it: a huge int overflows
    return isinstance(value, float) and not (math.isfinite(value) and abs(value) <= MAX_NUMBER)


def _check_text(value: str, where: str, limit: int = MAX_TEXT_CHARS) -> None:
    if len(value) > limit:
        raise ValueError(f"{where[:80]} is longer than {limit:,} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where[:80]} is not text (a lone surrogate)") from None


def _check_names(document: dict[str, Any]) -> None:
    """Names and labels that are printed in every row or point: short."""
    metadata = document.get("metadata")
    label = metadata.get("label") if isinstance(metadata, dict) else None
    named = [("metadata.label", label)] if isinstance(label, str) else []
    for key in ("databases", "phases"):
        items = document.get(key)
        named += (
            [(key, item) for item in items if isinstance(item, str)]
            if isinstance(items, list)
            else []
        )
    for where, name in named:
        _check_text(name, where, MAX_NAME_CHARS)
    notes = document.get("notes")
    for note in notes if isinstance(notes, list) else []:
        if isinstance(note, str):
            _check_text(note, "notes", MAX_REASON_CHARS)
    failures = document.get("failures")
    for failure in failures if isinstance(failures, list) else []:
        reason = failure.get("reason") if isinstance(failure, dict) else None
        if isinstance(reason, str):
            _check_text(reason, "failures.reason", MAX_REASON_CHARS)


def _check_mix_record(record: Any, number: int) -> None:
    """A mix record reads as the typed record every reader uses (zodbshootout.results.mix)."""
    if not isinstance(record, dict):
        raise ValueError(f"mix record {number} is not an object")
    for key in ("database", "concurrency", "seconds", "operations", "intervals"):
        if key not in record:
            raise ValueError(f"mix record {number} has no {key}")
    try:
        MixRecord.from_data(record)
    except ValueError as e:
        raise ValueError(f"mix record {number}: {e}") from None


def _check_maintenance_record(record: Any, number: int) -> None:
    """A maintain record reads as zodbshootout.results.maintenance's typed record."""
    if not isinstance(record, dict):
        raise ValueError(f"maintenance record {number} is not an object")
    for key, types_ in _MAINTENANCE_RECORD.items():
        if not isinstance(record.get(key), types_):
            raise ValueError(f"maintenance record {number}: {key} is missing or of a wrong type")
    seconds = record.get("seconds")
    if seconds is not None and not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"maintenance record {number} has an impossible duration")


_MAINTENANCE_RECORD: dict[str, tuple[type, ...]] = {
    "database": (str,),
    "operation": (str,),
    "objects": (int, type(None)),
    "seconds": (int, float, type(None)),
    "reason": (str, type(None)),
}


def _check_shape(result: RunResult) -> None:
    """Non-empty axes of positive numbers, and phases this version knows."""
    for name in ("databases", "object_counts", "concurrencies", "phases"):
        if name == "phases" and (result.mix or "mix" in result.metadata):
            continue  # a mix run has operations, not phases
        if not getattr(result, name):
            raise ValueError(f"{name} is empty")
    if min(result.object_counts + result.concurrencies + [result.repetitions]) < 1:
        raise ValueError("a count, concurrency or repetitions is below 1")
    # A phase this version doesn't know (from a newer zodbshootout) is shown
    # under its own name (render.labels); only a name that isn't one is refused.
    odd = [
        phase for phase in result.phases if not (isinstance(phase, str) and phase.isidentifier())
    ]
    if odd:
        raise ValueError(f"{odd[0]!r} is not a phase name")


def _check_metadata(metadata: dict[str, Any]) -> None:
    """The metadata the renderers read has the shape they expect (see _METADATA_SHAPE)."""
    _check_shape_of(metadata, _METADATA_SHAPE, "metadata")
    for key in ("started", "finished"):
        when = metadata.get(key)
        # Tables and history print it as a date: Python's dates end in 9999.
        if when is not None and not 0 <= when < LAST_TIMESTAMP:
            raise ValueError(f"metadata.{key} is not a time between 1970 and 9999")


_NUMBER = (int, float)
_OPTIONAL_NUMBER = (int, float, type(None))
#: 9999-12-30, a day before the last date Python has (time zones move it).
LAST_TIMESTAMP = 253_402_214_400
_OPTIONAL_TEXT = (str, type(None))
_SKEW_RECORD = {
    "database": (str,),
    "concurrency": (int,),
    "object_count": (int,),
    "phase": (str,),
    "repetition": (int,),
    "skew_seconds": _NUMBER,
    "!required": ("database", "concurrency", "object_count", "phase", "repetition"),
}
#: What readers look into: a tuple is the types a value may have; a dict is
#: an object whose listed keys (``*``: every key) have those shapes; a list
#: of one shape is a list of such items.  Keys left out may hold anything
#: (readers only print them); missing keys take the readers' defaults.
_METADATA_SHAPE: dict[str, Any] = {
    "label": _OPTIONAL_TEXT,
    "started": _OPTIONAL_NUMBER,
    "finished": _OPTIONAL_NUMBER,
    "format": _OPTIONAL_TEXT,
    "concurrency_mode": _OPTIONAL_TEXT,
    "index_entries": (int, type(None)),
    "options": {},
    "environment": {"python": {}, "cpu_count": (int, type(None))},
    "config": {},
    "databases": {"*": {"size": {}}},
    "filler_objects": {},
    "stopping_rule": {"precision": _OPTIONAL_NUMBER, "min_repetitions": (int, type(None))},
    "not_applicable": {"*": {"*": (str,)}},
    "load_average": {"*": {"before": _OPTIONAL_NUMBER, "after": _OPTIONAL_NUMBER}},
    "mix": {},
    "hosts": {},
    "barrier_skew": [_SKEW_RECORD],
}


def _check_leaf(value: Any, types_: tuple[type, ...], where: str) -> None:
    if not isinstance(value, types_) or (isinstance(value, bool) and bool not in types_):
        raise ValueError(f"{where[:80]} is {type(value).__name__}, not the value expected")


def _check_shape_of(value: Any, shape: Any, where: str) -> None:
    if isinstance(shape, tuple):
        _check_leaf(value, shape, where)
        return
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise ValueError(f"{where[:80]} is {type(value).__name__}, not a list")
        for index, item in enumerate(value):
            _check_shape_of(item, shape[0], f"{where}[{index}]")
        return
    if not isinstance(value, dict):
        raise ValueError(f"{where[:80]} is {type(value).__name__}, not an object")
    for key in shape.get("!required", ()):
        if key not in value:
            raise ValueError(f"{where[:80]} has no {key}")
    for key, item in value.items():
        inner = shape.get(key, shape.get("*"))
        if inner is not None and key != "!required":
            _check_shape_of(item, inner, f"{where}.{key}")


def _check_fields(record: Any, where: str) -> None:
    hints = typing.get_type_hints(type(record))
    for item in dataclasses.fields(record):
        value = getattr(record, item.name)
        if item.name not in ("measurements", "failures", "timing") and not _conforms(
            value, hints[item.name]
        ):
            raise ValueError(f"{where}: {item.name} is {type(value).__name__} {value!r:.40}")


def _conforms(value: Any, hint: Any) -> bool:
    """Whether JSON-loaded *value* fits the type *hint* (the few kinds records use)."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if origin in (types.UnionType, typing.Union):
        return any(_conforms(value, option) for option in arguments)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        return isinstance(value, list | tuple) and all(
            _conforms(item, arguments[0]) for item in value
        )
    if origin is dict:
        return isinstance(value, dict) and all(
            _conforms(k, arguments[0]) and _conforms(v, arguments[1]) for k, v in value.items()
        )
    return isinstance(value, hint)


def _upgrade_version_1(document: dict[str, Any]) -> dict[str, Any]:
    """A version 1 document as version 2 lays it out (the input is not changed)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return document
    metadata = dict(metadata)
    moved = {key: metadata.pop(key) for key in _MOVED_FROM_METADATA if key in metadata}
    return {**document, "metadata": metadata, **moved}


def dumps(result: RunResult) -> str:
    """The result file's text (indented, so that a diff of two files is readable)."""
    return "".join(chunks(result))


def chunks(result: RunResult) -> Iterator[str]:
    """The result file's text in the JSON encoder's pieces, to be written as they come."""
    encoder = json.JSONEncoder(indent=1, ensure_ascii=False, default=_plain)
    yield from encoder.iterencode(to_document(result))
    yield "\n"


def _plain(value: Any) -> Any:
    """Metadata that JSON can't hold as such: sets become sorted lists, the rest text.

    Saving happens after every database; an odd metadata value must not end the run.
    """
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def loads(text: str, source: str = "result file") -> RunResult:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{source} is not valid JSON: {e}") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise UsageError(f"{source} is not a zodbshootout result file: {e}") from None
    except RecursionError:
        raise UsageError(f"{source} is not a zodbshootout result file: nested too deeply") from None
    return from_document(document, source)


def save(result: RunResult, path: str) -> None:
    """Write *result* to *path* atomically (see :func:`write_atomically`).

    Safe to call repeatedly (after every database) and from an interrupt
    handler: either the previous complete file or the new one is on disk.
    ``-`` writes to stdout instead.
    """
    write_atomically(path, chunks(result))


__all__ = ["check_output_target", "chunks", "dumps", "load", "loads", "save", "write_atomically"]


def load(path: str) -> RunResult:
    """Read a result file (``-``: stdin); a missing or foreign file is a UsageError."""
    data = read_bytes(path, "result file", MAX_RESULT_BYTES)
    source = "stdin" if path == "-" else path
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source} is not a zodbshootout result file: not UTF-8 text") from None
    return loads(text, source)
