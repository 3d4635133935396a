"""A store directory's size, read while another process deletes files in it (as LevelDB's
compaction does): files that vanish are not counted, and reading never fails."""

from __future__ import annotations

import subprocess
import sys
import time

from zodbshootout.rawkv.backends import _directory_bytes

CHURN = """
import os, sys
directory = sys.argv[1]
while True:
    for i in range(50):
        path = os.path.join(directory, f"{i:06}.ldb")
        with open(path, "wb") as f:
            f.write(b"x" * 10)
        os.remove(path)
"""


def test_files_deleted_while_counting_are_skipped(tmp_path):
    (tmp_path / "CURRENT").write_bytes(b"y" * 1000)
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(tmp_path)])
    try:
        deadline = time.monotonic() + 1.5
        readings = 0
        while time.monotonic() < deadline:
            assert 1000 <= _directory_bytes(str(tmp_path)) <= 1000 + 50 * 10
            readings += 1
        assert churn.poll() is None  # it churned the whole time
        assert readings > 100
    finally:
        churn.kill()
        churn.wait()
