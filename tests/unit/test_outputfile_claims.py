"""Output claims inside one process (issue 35, 4).

Other processes: tests/integration/test_outputfile_lock.py.
"""

from __future__ import annotations

import os

import pytest
from sample_run import sample_result

from zodbshootout.errors import UsageError
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


def test_a_lock_name_that_is_someone_elses_file_is_refused_and_left_alone(tmp_path):
    """A .NAME.lock that is no lock of ours (a FIFO, a hard link, other content) is
    neither emptied nor removed: the write is refused."""
    mine = tmp_path / "mine.txt"
    mine.write_text("precious\n")
    makers = {
        "content": lambda lock: lock.write_text("precious\n"),
        "hard link": lambda lock: os.link(mine, lock),
        "fifo": os.mkfifo,
        "symlink": lambda lock: lock.symlink_to(mine),
        "directory": os.mkdir,
    }
    for what, make in makers.items():
        target = tmp_path / what / "out.txt"
        target.parent.mkdir()
        make(target.parent / ".out.txt.lock")
        with pytest.raises(UsageError, match=r"refusing to write|cannot write"), output_claims():
            claim_output(str(target))
        assert (target.parent / ".out.txt.lock").exists(), what
        assert not target.exists()
    assert mine.read_text() == "precious\n"
