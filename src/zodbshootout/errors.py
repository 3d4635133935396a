"""Exceptions that carry a message meant for the user.

A ``UsageError`` means nothing could be run (exit code 2); a ``CellError``
means one cell of the table could not be measured and says why.  The exit
codes of the run and of every subcommand are defined here too, once.
"""


class UsageError(Exception):
    """The user's input (options, configuration, environment) is wrong.

    The message is one line that says what is wrong and how to fix it.
    """


class CellError(Exception):
    """A measurement could not be made; the message becomes a footnote."""


class DataMismatch(CellError):
    """A read returned values other than the ones the update phase wrote."""


# The program's exit codes, for the run and every subcommand alike.
#: Every cell measured; a subcommand did what it was asked.
EXIT_OK = 0
#: Some cells failed (each says why); ``compare --fail-if-slower`` found a
#: slowdown beyond the threshold; or an internal error (a bug).
EXIT_CELLS_FAILED = 1
#: Nothing could be run: bad usage, configuration, environment or input file.
EXIT_USAGE = 2
#: ``compare --fail-if-slower PCT``: no cell was found slower, but some could
#: not have shown a PCT% slowdown (too noisy or too few repetitions).
EXIT_INCONCLUSIVE = 3
#: Interrupted by SIGINT (Ctrl-C) or SIGTERM; what was measured is still printed.
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


def exit_for_signal(name: str | None) -> int:
    """The exit code of a run a signal stopped: 143 for SIGTERM, 130 for SIGINT (or any other)."""
    return EXIT_SIGTERM if name == "SIGTERM" else EXIT_SIGINT


def exit_for_run(interrupted: bool, signal: str | None, failed: bool) -> int:
    """A finished mode's exit code: the signal's if one stopped it, 1 if anything failed."""
    if interrupted:
        return exit_for_signal(signal)
    return EXIT_CELLS_FAILED if failed else EXIT_OK


def install_hint(extra: str) -> str:
    """How to install an extra: zodbshootout is installed from a checkout, not from PyPI."""
    return f"pip install '.[{extra}]' in the zodbshootout checkout"
