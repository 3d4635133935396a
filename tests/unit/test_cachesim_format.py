"""cachesim's pure parts: sizes in, table out."""

from __future__ import annotations

import argparse

import pytest

from zodbshootout.cachesim import HitCount, TraceReport, format_reports, format_size, parse_sizes


def test_sizes_are_powers_of_1024_like_zconfig():
    assert parse_sizes("64KB, 1MB,20mb,1.5MB,4096") == [65536, 1 << 20, 20 << 20, 1572864, 4096]


@pytest.mark.parametrize("text", ["", "1", "ten MB", "5TB"])
def test_a_bad_size_says_which(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_sizes(text)


def test_size_labels():
    assert [format_size(s) for s in (512, 65536, 1 << 20, 1536 << 10, 200 << 20)] == [
        "512 B",
        "64 KiB",
        "1 MiB",
        "1.5 MiB",
        "200 MiB",
    ]


def test_table_has_the_actual_row_each_size_and_totals_for_several_traces():
    sizes = [65536, 1 << 20]
    reports = [
        TraceReport(
            "/d/a.trace", HitCount(10, 5), {65536: HitCount(10, 2), 1 << 20: HitCount(10, 9)}
        ),
        TraceReport("/d/b.trace", None, {65536: HitCount(0, 0), 1 << 20: HitCount(30, 30)}),
    ]
    assert format_reports(reports, sizes) == [
        "Trace         Cache size  Loads  Hits  Hit rate",
        "-----------------------------------------------",
        "a.trace           actual     10     5    50.0 %",
        "a.trace           64 KiB     10     2    20.0 %",
        "a.trace            1 MiB     10     9    90.0 %",
        "b.trace           actual    n/a   n/a       n/a",
        "b.trace           64 KiB      0     0       n/a",
        "b.trace            1 MiB     30    30   100.0 %",
        "all 2 traces      64 KiB     10     2    20.0 %",
        "all 2 traces       1 MiB     40    39    97.5 %",
    ]
