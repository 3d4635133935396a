"""The added round-trip times a run asks for: ``--rtt 0,0.5,2,10ms``, ``--rtt 2ms±0.5``.

A ladder is a comma-separated list of steps; a step is a round-trip time
with an optional jitter::

    ladder := step ("," step)*
    step   := NUMBER [UNIT] [("±" | "+-") NUMBER [UNIT]]
    UNIT   := "us" | "µs" | "ms" | "s"

A number without a unit takes the next unit written after it in the list
or, when none follows, the last one written before it; a list without any
unit is in milliseconds.  So ``0,0.5,2,10ms`` is four steps in ms,
``2ms±0.5`` is 2 ms ± 0.5 ms, ``500us,2ms`` mixes units.

The time is the round trip *added* to what the network already has: the
proxy delays each direction by half of it (see zodbshootout.network.proxy),
and with a jitter J each direction's delay is drawn uniformly within ±J/2,
so a round trip's added time lies within ±J of the step.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from zodbshootout.errors import UsageError

#: The largest round trip asked (an RTT above this is surely a typo: 10 s).
MAX_RTT_SECONDS = 10.0
#: The most steps in one ladder (each step is a whole run of every database).
MAX_STEPS = 20

_UNITS = {"us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf(?:inity)?)"
_STEP = re.compile(
    rf"\s*(?P<rtt>{_NUMBER})\s*(?P<rtt_unit>[a-zµμ]*)\s*"
    rf"(?:(?:±|\+-|\+/-)\s*(?P<jitter>{_NUMBER})\s*(?P<jitter_unit>[a-zµμ]*)\s*)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RttStep:
    """One step of the ladder: the round trip added, and its jitter (± seconds)."""

    rtt_seconds: float
    jitter_seconds: float = 0.0

    @property
    def one_way_seconds(self) -> float:
        """The delay each direction gets: half the round trip."""
        return self.rtt_seconds / 2

    @property
    def label(self) -> str:
        """``2 ms``, ``2 ms ± 0.5`` (milliseconds, as RTTs are read)."""
        text = f"{self.rtt_seconds * 1e3:g} ms"
        if self.jitter_seconds:
            text += f" ± {self.jitter_seconds * 1e3:g}"
        return text


#: No delay added: the proxy forwards at once.
NO_DELAY = RttStep(0.0)


def parse_rtt_ladder(text: str, option: str = "--rtt") -> tuple[RttStep, ...]:
    """The steps of *text*, in its order; a UsageError of one line for anything wrong.

    Refused: an empty list or step, a malformed number or unit, NaN or
    infinity, a negative time, a round trip over 10 s, a jitter larger than
    its round trip (a delay would go negative), the same step twice, more
    than MAX_STEPS steps.
    """
    parts = text.split(",")
    if len(parts) > MAX_STEPS:
        raise UsageError(f"{option}: at most {MAX_STEPS} steps, not {len(parts)}")
    raw = [_split_step(part, option) for part in parts]
    units = _units_in_order(raw)
    steps = []
    for index, (source, rtt, jitter) in enumerate(raw):
        rtt_seconds = _seconds(rtt[0], units[2 * index], source, option)
        jitter_seconds = 0.0
        if jitter is not None:
            jitter_seconds = _seconds(jitter[0], units[2 * index + 1], source, option)
        steps.append(_checked(RttStep(rtt_seconds, jitter_seconds), source, option))
    labels = [step.label for step in steps]
    for label in labels:
        if labels.count(label) > 1:
            raise UsageError(f"{option}: {label} is asked twice in {text.strip()!r}")
    return tuple(steps)


_Number = tuple[str, str]  # (digits, unit as written, "" for none)


def _split_step(part: str, option: str) -> tuple[str, _Number, _Number | None]:
    source = part.strip()
    if not source:
        raise UsageError(f"{option}: an empty step; write e.g. {option} 0,0.5,2,10ms")
    match = _STEP.fullmatch(part)
    if match is None:
        raise UsageError(
            f"{option}: {source[:40]!r} is not a round-trip time such as 2ms or 2ms±0.5"
        )
    for unit in (match["rtt_unit"], match["jitter_unit"]):
        if unit and unit.lower() not in _UNITS:
            raise UsageError(f"{option}: {source[:40]!r}: unknown unit {unit!r} (us, ms or s)")
    jitter = None
    if match["jitter"] is not None:
        jitter = (match["jitter"], match["jitter_unit"].lower())
    return source, (match["rtt"], match["rtt_unit"].lower()), jitter


def _units_in_order(raw: list[tuple[str, _Number, _Number | None]]) -> list[str]:
    """Each number's unit (rtt, jitter, rtt, jitter...), the missing ones filled in.

    A missing unit is the next one written after it, else the last one
    written before it, else ms.  An absent jitter's slot is filled too, unused.
    """
    written = []
    for _source, rtt, jitter in raw:
        written += [rtt[1], jitter[1] if jitter else ""]
    units = list(written)
    following = ""
    for index in range(len(units) - 1, -1, -1):
        if written[index]:
            following = written[index]
        units[index] = written[index] or following
    preceding = "ms"
    for index, unit in enumerate(units):
        if written[index]:
            preceding = written[index]
        units[index] = unit or preceding
    return units


def _seconds(number: str, unit: str, source: str, option: str) -> float:
    value = float(number)
    if math.isnan(value) or math.isinf(value):
        raise UsageError(f"{option}: {source[:40]!r}: a round-trip time is a finite number")
    return value * _UNITS[unit]


def _checked(step: RttStep, source: str, option: str) -> RttStep:
    if step.rtt_seconds < 0 or step.jitter_seconds < 0:
        raise UsageError(f"{option}: {source[:40]!r}: a delay can't be negative")
    if step.rtt_seconds > MAX_RTT_SECONDS:
        raise UsageError(
            f"{option}: {source[:40]!r}: at most {MAX_RTT_SECONDS:g} s of added round trip"
        )
    if step.jitter_seconds > step.rtt_seconds:
        raise UsageError(
            f"{option}: {source[:40]!r}: the jitter can't exceed the round trip "
            "(a delay would be negative)"
        )
    return step
