"""Histograms as results hold them: freed as soon as they are dropped."""

from __future__ import annotations

import gc
import weakref

from zodbshootout.results.histogram import decode, encode, merge, new_histogram


def test_a_dropped_histogram_is_freed_without_the_cyclic_collector():
    """A report merges a histogram per interval: each must go when dropped, not
    wait (188 KB of counts each) for a collection that may come hundreds later."""
    histogram = new_histogram()
    histogram.record_value(1234)
    merged = merge([encode(histogram)] * 2)
    gone = [weakref.ref(histogram), weakref.ref(merged)]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del histogram, merged
        assert [ref() for ref in gone] == [None, None]
    finally:
        if was_enabled:
            gc.enable()


def test_encoding_and_merging_still_go_through_the_weak_back_reference():
    histogram = new_histogram()
    for value in (10, 20, 3000, 3000, 90_000):
        histogram.record_value(value)
    again = decode(encode(histogram))
    assert again.get_total_count() == 5
    assert again.get_value_at_percentile(50.0) == histogram.get_value_at_percentile(50.0)
    union = merge([encode(histogram), encode(again)])
    assert union.get_total_count() == 10
    assert union.get_max_value() == histogram.get_max_value()
    assert encode(union) != encode(histogram)
