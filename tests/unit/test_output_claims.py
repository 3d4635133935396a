"""Output claims inside one process (issue 35, 4); other processes: test_output_lock.py."""

from __future__ import annotations

import os

from sample_run import sample_result

from zodbshootout.outputfile import claim_output, output_claims, write_atomically
from zodbshootout.results import file as resultfile


def test_a_library_write_leaves_no_lock_behind(tmp_path):
    resultfile.save(sample_result(), str(tmp_path / "run.json"))
    assert os.listdir(tmp_path) == ["run.json"]


def test_a_command_holds_its_outputs_until_it_ends_and_writes_them_again(tmp_path):
    target = str(tmp_path / "out.txt")
    with output_claims():
        claim_output(target)
        assert sorted(os.listdir(tmp_path)) == [".out.txt.lock"]
        write_atomically(target, "one")
        write_atomically(target, "two")  # its own: written again
        with output_claims():  # nested: the outer one releases
            claim_output(target)
        assert sorted(os.listdir(tmp_path)) == [".out.txt.lock", "out.txt"]
    assert os.listdir(tmp_path) == ["out.txt"]
    with open(target) as file:
        assert file.read() == "two"
