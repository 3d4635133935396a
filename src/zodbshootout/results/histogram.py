"""Latency histograms as results hold them: HdrHistograms in their standard string encoding.

A histogram counts whole microseconds, 3 significant digits from 1 µs to an
hour (anything longer is clamped), in a fixed few kilobytes however many
values it holds.  Histograms cross process boundaries and sit in result
files as their encoding (base64 of the compressed V2 format), a short
string; :func:`decode` and :func:`merge` read them back.  The ``hdrhistogram``
package is imported only when a histogram is made, so that the rest of
zodbshootout (and an environment installed before mix existed) works
without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zodbshootout.errors import UsageError

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

LOWEST_MICROSECONDS = 1
HIGHEST_MICROSECONDS = 3_600_000_000  # an hour: anything longer is clamped
SIGNIFICANT_DIGITS = 3


def require_hdrhistogram() -> None:
    """A UsageError that says what to install when the hdrhistogram package is missing."""
    try:
        import hdrh.histogram  # noqa: F401
    except ImportError:
        raise UsageError(
            "zodbshootout mix needs the hdrhistogram package: pip install hdrhistogram"
        ) from None


def new_histogram() -> HdrHistogram:
    """An empty histogram of whole microseconds (the bounds above)."""
    from hdrh.histogram import HdrHistogram  # lazy: see require_hdrhistogram

    return HdrHistogram(LOWEST_MICROSECONDS, HIGHEST_MICROSECONDS, SIGNIFICANT_DIGITS)


def decode(encoded: str) -> HdrHistogram:
    """A histogram from its encoding (:meth:`HdrHistogram.encode`)."""
    histogram = new_histogram()
    if encoded:
        histogram.decode_and_add(encoded)
    return histogram


def encode(histogram: HdrHistogram) -> str:
    """The histogram as a string ("" when empty: the library can't encode nothing)."""
    if histogram.get_total_count() == 0:
        return ""
    encoded = histogram.encode()
    return encoded.decode("ascii") if isinstance(encoded, bytes) else str(encoded)


def merge(encoded: list[str]) -> HdrHistogram:
    """The sum of encoded histograms."""
    total = new_histogram()
    for text in encoded:
        if text:
            total.decode_and_add(text)
    return total
