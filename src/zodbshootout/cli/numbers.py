"""The numbers of the command line: finite, within a documented range, refused in one line.

Every numeric option of every parser (the run's and each subcommand's) takes
one of these as its argparse ``type``, so that NaN, infinities and values
beyond an option's range are refused where the option is read, in one line
that states the range (exit 2), instead of failing later inside a database's
run.  The limits themselves belong to the modules that own them (the run's
options, the mix, the cache simulator); this module only enforces them.

``tests/unit/test_cli_numbers.py`` walks every parser and feeds each
:class:`Numeric` type NaN, ±inf, 1e308 and values just outside its range in
every form the option is written (:meth:`Numeric.hostile_forms`): a new
option is covered without a new test, and a bare ``int`` or ``float`` type
fails that test.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.network.delays import parse_rtt_ladder
from zodbshootout.workload.limits import (
    MAX_CONCURRENCY,
    MAX_OBJECT_SIZE_BYTES,
    MAX_TIMEOUT_SECONDS,
    MIN_TIMEOUT_SECONDS,
)
from zodbshootout.workload.objects import MIN_OBJECT_SIZE_BYTES

__all__ = [
    "CONCURRENCY",
    "OBJECT_SIZE",
    "RTT_LADDER",
    "SEED",
    "TIMEOUT",
    "Number",
    "Numbers",
    "Numeric",
    "Parsed",
]

#: The longest piece of a refused value repeated in the message.
_SHOWN_CHARS = 40


def shown(text: str) -> str:
    """*text* quoted for an error message, cut when long (a 10 kB argument)."""
    text = text.strip()
    if len(text) > _SHOWN_CHARS:
        return f"{text[:_SHOWN_CHARS]!r}…({len(text):,} characters)"
    return repr(text)


class Numeric:
    """An argparse type for a number (or numbers) with a documented range."""

    def __call__(self, text: str) -> Any:
        raise NotImplementedError

    def hostile_forms(self, value: str) -> list[str]:
        """How *value* (``nan``, ``1e308``) can be written as this option's argument."""
        return [value]

    def outside(self) -> list[str]:
        """Values just outside the range, written as numbers."""
        return []


class Number(Numeric):
    """A finite int or float from *minimum* to *maximum*; *above*: strictly above *minimum*.

    *below*: strictly below *maximum*.  *unit* names what the number counts,
    for the message (``seconds``); *suffix* is accepted and dropped (``%``).
    """

    def __init__(
        self,
        kind: type[int] | type[float],
        minimum: float,
        maximum: float,
        unit: str = "",
        *,
        above: bool = False,
        below: bool = False,
        suffix: str = "",
    ) -> None:
        self.kind = kind
        self.minimum = minimum
        self.maximum = maximum
        self.unit = unit
        self.above = above
        self.below = below
        self.suffix = suffix
        self.__name__ = "number"  # argparse names the type in its own messages

    def __call__(self, text: str) -> int | float:
        word = text.strip()
        if self.suffix:
            word = word.removesuffix(self.suffix).strip()
        try:
            value: int | float = int(word) if self.kind is int else float(word)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not {self.describe()}") from None
        if not self.contains(value):
            raise argparse.ArgumentTypeError(f"{shown(text)} is not {self.describe()}")
        return value

    def contains(self, value: float) -> bool:
        """True if *value* is finite and within the range (NaN never is)."""
        if isinstance(value, float) and not math.isfinite(value):
            return False  # (no float() of a huge int: it would overflow)
        low = value > self.minimum if self.above else value >= self.minimum
        high = value < self.maximum if self.below else value <= self.maximum
        return low and high

    def describe(self) -> str:
        """``a whole number from 1 to 256`` or ``a number of seconds above 0, at most 604,800``."""
        what = "a whole number" if self.kind is int else "a number"
        if self.unit:
            what += f" of {self.unit}"
        low, high = _format(self.minimum), _format(self.maximum)
        if not self.above and not self.below:
            return f"{what} from {low} to {high}"
        lower = f"above {low}" if self.above else f"at least {low}"
        upper = f"below {high}" if self.below else f"at most {high}"
        return f"{what} {lower}, {upper}"

    def outside(self) -> list[str]:
        step = 1 if self.kind is int else 1e-6 * max(1.0, abs(self.maximum))
        values = [self.maximum + step, self.minimum - (1 if self.kind is int else 1e-3)]
        if self.below:
            values.append(self.maximum)
        if self.above:
            values.append(self.minimum)
        return [str(int(v)) if self.kind is int else repr(float(v)) for v in values]

    def hostile_forms(self, value: str) -> list[str]:
        return [value, value + self.suffix] if self.suffix else [value]


class Seconds(Number):
    """A duration: seconds (``90``, ``90s``) or minutes and hours (``15m``, ``2h``)."""

    UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}

    def __init__(self, minimum: float, maximum: float, *, above: bool = False) -> None:
        super().__init__(float, minimum, maximum, "seconds", above=above)

    def __call__(self, text: str) -> int | float:
        word = text.strip()
        factor = self.UNITS.get(word[-1:].lower()) if word[:-1].strip() else None
        if factor is None:
            return super().__call__(text)
        try:
            value = float(word[:-1].strip()) * factor
        except ValueError:
            raise argparse.ArgumentTypeError(f"{shown(text)} is not {self.describe()}") from None
        if not self.contains(value):
            raise argparse.ArgumentTypeError(f"{shown(text)} is not {self.describe()}")
        return value

    def describe(self) -> str:
        return super().describe() + " (or minutes and hours: 15m, 2h)"


class RestartAt(Numeric):
    """--restart-clients AT: ("fraction", x) for 0 < x < 1 (of --duration), else ("seconds", s)."""

    def __init__(self, maximum: float) -> None:
        self.seconds = Seconds(0, maximum, above=True)
        self.__name__ = "moment"

    def __call__(self, text: str) -> tuple[str, float]:
        try:
            value = float(text.strip())
        except ValueError:
            value = math.nan
        if 0 < value < 1:
            return ("fraction", value)
        try:
            return ("seconds", float(self.seconds(text)))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not a fraction of --duration below 1 or "
                f"{self.seconds.describe()}"
            ) from None

    def outside(self) -> list[str]:
        return self.seconds.outside()


class Numbers(Numeric):
    """``100,1000``: a comma-separated list of :class:`Number` *item*, each in its range."""

    def __init__(self, item: Number) -> None:
        self.item = item
        self.__name__ = "numbers"

    def __call__(self, text: str) -> list[int | float]:
        return [self.item(part) if part.strip() else self._empty(text) for part in text.split(",")]

    def _empty(self, text: str) -> int:
        raise argparse.ArgumentTypeError(f"{shown(text)}: '' is not {self.item.describe()}")

    def describe(self) -> str:
        return f"{self.item.describe()}, or several separated by commas"

    def outside(self) -> list[str]:
        return self.item.outside()

    def hostile_forms(self, value: str) -> list[str]:
        first = str(self.item.kind(max(self.item.minimum, 1)))
        return [value, f"{first},{value}"]


class Parsed(Numeric):
    """A value of numbers in a form of their own, parsed by its owner's function.

    *parse* raises ValueError (or ArgumentTypeError) for a refused value;
    *forms* are templates with ``{}`` where a number goes (``read={}``), for
    :meth:`hostile_forms`.
    """

    def __init__(
        self,
        parse: Callable[[str], Any],
        forms: tuple[str, ...],
        outside: tuple[str, ...] = (),
        name: str = "value",
    ) -> None:
        self.parse = parse
        self.forms = forms
        self._outside = outside
        self.__name__ = name

    def __call__(self, text: str) -> Any:
        try:
            return self.parse(text)
        except (ValueError, UsageError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    def outside(self) -> list[str]:
        return list(self._outside)

    def hostile_forms(self, value: str) -> list[str]:
        return [form.format(value) for form in self.forms]


def _format(value: float) -> str:
    """``256``, ``604,800``, ``0.1``: a bound as the messages write it."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:g}"


# The numbers that several parsers share, so that their ranges can't drift apart.
#: -c: workers (the classic run takes several, comma-separated).
CONCURRENCY = Number(int, 1, MAX_CONCURRENCY)
#: -s: payload bytes per object.
OBJECT_SIZE = Number(int, MIN_OBJECT_SIZE_BYTES, MAX_OBJECT_SIZE_BYTES, "bytes")
#: --timeout: seconds a stage (or a mix on top of its duration) may take.
TIMEOUT = Number(float, MIN_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, "seconds")
#: --seed: any 64-bit integer.
SEED = Number(int, -(2**63), 2**63 - 1)


#: --rtt: a ladder of added round-trip times (the classic run's and mix's), in
#: network.delays' own form: ``0,0.5,2,10ms``, ``2ms±0.5``; each at most 10 s.
def _rtt_ladder(text: str) -> Any:
    """The ladder's steps; argparse names the option itself, so the parser's name is cut."""
    try:
        return parse_rtt_ladder(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--rtt: ")) from None


RTT_LADDER = Parsed(
    _rtt_ladder, ("{}", "{}ms", "0,{}ms", "2ms±{}"), ("-1ms", "10001ms", "-0.001"), "ladder"
)

#: --rtt's help, the same for both parsers.
RTT_HELP = (
    "measure each database with network servers (ZEO, PostgreSQL, MySQL, memcached) at "
    "each added round-trip time, through a delaying proxy of the tool's own: e.g. "
    "0,0.5,2,10ms, or 2ms±0.5 for jitter; each step is a column NAME@STEP, and the "
    "time per transaction is fitted against the RTT measured (see docs/rtt.rst)"
)
