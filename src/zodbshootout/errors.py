"""Exceptions that carry a message meant for the user.

A ``UsageError`` means nothing could be run (exit code 2); a ``CellError``
means one cell of the table could not be measured and says why.
"""


class UsageError(Exception):
    """The user's input (options, configuration, environment) is wrong.

    The message is one line that says what is wrong and how to fix it.
    """


class CellError(Exception):
    """A measurement could not be made; the message becomes a footnote."""


class DataMismatch(CellError):
    """A read returned values other than the ones the update phase wrote."""
