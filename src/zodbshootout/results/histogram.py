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

import ctypes
import sys
import weakref
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

    histogram = HdrHistogram(LOWEST_MICROSECONDS, HIGHEST_MICROSECONDS, SIGNIFICANT_DIGITS)
    # The library's encoder refers back to its histogram: a cycle holding the
    # counts (188 KB) that only the cyclic collector frees.  A report merging
    # hundreds of intervals left megabytes of them behind, and a process's
    # resident memory keeps its highest point.  A weak reference back instead
    # frees a histogram the moment its last user drops it.
    histogram.encoder.histogram = weakref.proxy(histogram)
    return histogram


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


def merge(encoded: list[str], into: HdrHistogram | None = None) -> HdrHistogram:
    """The sum of encoded histograms: *into*, emptied first and reused, or a new one.

    Each one is added in place (:func:`add_encoded`), so a runner that merges
    every worker's interval each second into the same histogram allocates
    nothing that outlives the call.
    """
    total = new_histogram() if into is None else empty(into)
    for text in encoded:
        add_encoded(total, text)
    return total


def empty(histogram: HdrHistogram) -> HdrHistogram:
    """*histogram* emptied in place (one memset: ``reset()`` loops in Python), and returned."""
    counts = histogram.counts
    ctypes.memset(ctypes.addressof(counts), 0, ctypes.sizeof(counts))
    histogram.total_count = 0
    histogram.min_value = sys.maxsize
    histogram.max_value = 0
    return histogram


def add_encoded(total: HdrHistogram, encoded: str) -> None:
    """Add the histogram *encoded* to *total* in place ("": nothing to add).

    The library's ``decode_and_add`` decodes into a new HdrHistogram, which
    refers to its encoder and the encoder back to it: a cycle, with 188 KB
    of counts, that only the cyclic garbage collector frees.  A coordinator
    that merged every worker's interval each second left dozens of them
    between collections (its traced memory swung by 20 MB) and its resident
    memory kept the highest swing.  Here the decoded payload (no cycle) is
    added with the library's own C addition and freed on return.  Every
    histogram here has the same bounds (:func:`new_histogram`), so the
    payload's counts line up with *total*'s.
    """
    if not encoded:
        return
    from hdrh.codec import HdrHistogramEncoder  # lazy: see require_hdrhistogram
    from pyhdrh import add_array

    payload = HdrHistogramEncoder.decode(encoded)
    found = payload.init_counts(total.counts_len)
    if not found["total"]:
        return
    add_array(
        ctypes.addressof(total.counts),
        ctypes.addressof(payload.get_counts()),
        total.counts_len,
        total.word_size,
    )
    total.total_count += found["total"]
    low = total.get_value_from_index(found["min_nonzero_index"])
    high = total.get_highest_equivalent_value(
        total.get_value_from_index(found["max_nonzero_index"])
    )
    total.min_value = min(total.min_value, low)
    total.max_value = max(total.max_value, high)
