"""A run's output files: ``-o``, ``--save-to``, ``--label``, ``--format``, ``--pyperf``.

Used by the classic run (:mod:`zodbshootout.cli.measure`) and ``mix``
(:mod:`zodbshootout.cli.commands.mix`) alike.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

from zodbshootout.cli.say import emit
from zodbshootout.errors import UsageError
from zodbshootout.results import file as resultfile
from zodbshootout.results import metadata
from zodbshootout.results.record import RunResult

if TYPE_CHECKING:  # the options' module imports the phases, which import ZODB
    from zodbshootout.options.run import RunOptions

__all__ = ["RunOutputs"]


class RunOutputs:
    """The files a run writes, kept up to date as databases finish.

    The result file is rewritten (atomically) after every database, so an
    interruption or a crash later keeps everything measured so far.  A save
    that fails makes the run fail (``save_failed``), and the message says
    what the path holds instead: never an earlier file taken for this run's.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.output: str | None = getattr(args, "output", None)
        self.pyperf: str | None = getattr(args, "pyperf", None)
        self.format: str = getattr(args, "format", None) or "csv"
        self.label: str | None = getattr(args, "label", None)
        _check_label(self.label)
        self.save_failed = False  # a final save failed: the run fails too
        self._warned = False  # an intermediate save failed (said once)
        self._saved: set[str] = set()  # paths this run has written at least once
        #: The file --save-to DIR writes: named after the time the run starts, and its label.
        self.saved: str | None = None
        # -o and --pyperf first: a refusal leaves no --save-to directory behind.
        for path in (self.output, self.pyperf):
            _check_writable(path, getattr(args, "config", None))
        save_to: str | None = getattr(args, "save_to", None)
        if save_to:
            from zodbshootout.results.history import saved_file_name, unused_path

            if not os.path.isdir(save_to):
                try:
                    os.makedirs(save_to)
                except OSError as e:
                    raise UsageError(f"cannot create {save_to}: {e.strerror or e}") from None
            self.saved = unused_path(save_to, saved_file_name(time.time(), self.label))
        _check_writable(self.saved, getattr(args, "config", None))

    @property
    def result_files(self) -> list[str]:
        """Where the result document goes: -o (unless stdout) and the --save-to file."""
        return [path for path in (self.output, self.saved) if path and path != "-"]

    def describe(
        self, result: RunResult, options: RunOptions, config_path: str, config_text: str
    ) -> None:
        """Record environment, options and the redacted configuration in *result*."""
        result.metadata.update(
            metadata.run_metadata(options, config_path, config_text, label=self.label)
        )
        # So that ``show`` prints the table the run printed.
        result.metadata["format"] = self.format

    def database_done(self, result: RunResult) -> None:
        """Save what was measured so far (the runner calls this after every database).

        A failed save must not end the run: the table is still printed, and
        the final save is tried again (and reported) by :meth:`finish`.
        """
        for path in self.result_files:
            try:
                resultfile.save(result, path)
                self._saved.add(path)
            except (OSError, UsageError) as e:
                if not self._warned:
                    emit(f"zodbshootout: warning: {_save_error(path, e)}", sys.stderr)
                self._warned = True

    def finish(self, result: RunResult) -> None:
        """Write the final files: the result (with its end time) and the pyperf suite.

        A file that can't be written is reported on stderr and sets
        ``save_failed``; the table is still printed, since the measurements
        are worth more than the file.
        """
        environment = result.metadata.get("environment")
        if isinstance(environment, dict):
            environment["load_average_end"] = metadata.load_average()
        files: list[tuple[str, Callable[[], Iterable[str]]]] = [
            (path, partial(resultfile.chunks, result)) for path in (self.output, self.saved) if path
        ]
        if self.pyperf:
            from zodbshootout.results.pyperf_export import dumps_pyperf

            files.append((self.pyperf, partial(dumps_pyperf, result)))
        for path, text in files:
            try:
                resultfile.write_atomically(path, text())
                self._saved.add(path)
            except (OSError, UsageError) as e:
                self.save_failed = True
                emit(
                    f"zodbshootout: error: {_save_error(path, e)}{self._left_at(path)}",
                    sys.stderr,
                )

    def _left_at(self, path: str) -> str:
        """What a failed save leaves at *path*, so nobody takes it for this run's result."""
        if path in self._saved:
            return f"; {path} holds this run's results only up to the last database saved"
        if os.path.lexists(path):
            return (
                f"; {path} is left as it was: it still holds an earlier file, not this run's result"
            )
        return ""

    @property
    def table_on_stdout(self) -> bool:
        """``-o -`` puts the result document on stdout, so the table stays off it."""
        return self.output != "-"


def _save_error(path: str, error: OSError | UsageError) -> str:
    """``cannot save PATH: reason`` (a refused target says so in its own words)."""
    if isinstance(error, UsageError):
        return str(error)
    return f"cannot save {path}: {error.strerror or error}"


def _check_label(label: str | None) -> None:
    """Refuse a label the result file could not hold, before the run, not at ``show``."""
    if label is None:
        return
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, in argv
        raise UsageError("--label is not UTF-8 text") from None
    if len(label) > resultfile.MAX_NAME_CHARS:
        raise UsageError(
            f"--label is {len(label)} characters long; "
            f"at most {resultfile.MAX_NAME_CHARS} fit in a result file"
        )


def _check_writable(path: str | None, config: str | None = None) -> None:
    """Refuse before the run, not after it, an output file that can't be written.

    Nor may it be the configuration file (``-o`` after the CONFIG, mistyped).
    """
    if not path or path == "-":
        return
    resultfile.check_output_target(path)
    if (
        config
        and os.path.exists(path)
        and os.path.exists(config)
        and os.path.samefile(path, config)
    ):
        raise UsageError(f"refusing to write {path}: it is the configuration file {config}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write {path}: permission denied")
