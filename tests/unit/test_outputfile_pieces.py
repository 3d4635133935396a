"""A result written in pieces: never held whole in memory, never half on disk."""

from __future__ import annotations

import os
import tracemalloc

import pytest
from sample_run import sample_result

from zodbshootout.outputfile import write_atomically
from zodbshootout.results import file as resultfile


def test_pieces_are_written_as_the_whole_text_would_be(tmp_path):
    target = tmp_path / "out.json"
    pieces = ["{", '"é": ', "1" * 70_000, ', "x": "ü"', "}\n"]  # more than one block
    write_atomically(str(target), iter(pieces))
    assert target.read_text(encoding="utf-8") == "".join(pieces)


def test_pieces_that_fail_midway_leave_the_previous_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("before\n")

    def pieces():
        yield "x" * 100_000  # a block is written before the failure
        raise RuntimeError("the encoder failed")

    with pytest.raises(RuntimeError):
        write_atomically(str(target), pieces())
    assert target.read_text() == "before\n"
    assert os.listdir(tmp_path) == ["out.json"]


def _extra_peak(write) -> int:
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        write()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_save_is_the_dumps_text_without_holding_it(tmp_path):
    """A checkpoint a minute saves the whole result so far: written as the encoder
    goes, its peak is a fraction of what joining the text first would cost."""
    result = sample_result()
    result.metadata["series"] = [[i, i / 2, "sample"] for i in range(30_000)]
    text = resultfile.dumps(result)
    saved = tmp_path / "run.json"
    resultfile.save(result, str(saved))
    assert saved.read_text(encoding="utf-8") == text
    assert len(text) > 1_000_000
    joined = _extra_peak(lambda: resultfile.dumps(result))
    streamed = _extra_peak(lambda: resultfile.save(result, str(tmp_path / "again.json")))
    assert streamed < joined / 3, (streamed, joined)
