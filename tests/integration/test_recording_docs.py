"""docs/recording.rst's configuration and Python examples work as shown.

Its commands run with the other documents' (test_doc_commands.py); its
examples are not commands, so they run here: the page's ``xml`` block opened
by ZODB.config, its ``python`` block run as a program, with the page's
/var/lib/myapp pointing at a directory of the test's.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from zodbshootout.recording import open_trace
from zodbshootout.recording.format import Op

from conftest import ROOT

PAGE = ROOT / "docs" / "recording.rst"


def code_block(language: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(rf"^\.\. code-block:: {language}\n\n((?:   .*\n|\n)+)", text, re.M)
    assert match, language
    return textwrap.dedent(match.group(1))


def traces_in(directory):
    return sorted(directory.glob("app.*.zodbtrace"))


def test_the_configuration_example_records(tmp_path):
    (tmp_path / "traces").mkdir()
    config = tmp_path / "app.conf"
    config.write_text(code_block("xml").replace("/var/lib/myapp", str(tmp_path)))
    program = (
        "import sys, ZODB.config\n"
        "db = ZODB.config.databaseFromFile(open(sys.argv[1]))\n"
        "with db.transaction() as conn:\n    conn.root()['x'] = 1\n"
        "db.close()\n"
    )
    subprocess.run([sys.executable, "-c", program, str(config)], check=True, timeout=120)
    (path,) = traces_in(tmp_path / "traces")
    ops = [r.op for r in open_trace(str(path)).records()]
    assert ops.count(Op.TPC_FINISH) == 2  # the root's creation, then x


def test_the_python_example_records(tmp_path):
    (tmp_path / "traces").mkdir()
    program = code_block("python").replace("/var/lib/myapp", str(tmp_path))
    for _ in range(2):
        subprocess.run([sys.executable, "-c", program], check=True, timeout=120)
    paths = traces_in(tmp_path / "traces")
    assert len(paths) == 2  # a file per process
    finished = [[r.op for r in open_trace(str(p)).records()].count(Op.TPC_FINISH) for p in paths]
    assert sorted(finished) == [1, 2]  # the first process also created the root
