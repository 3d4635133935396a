"""Escape sequences in a file never reach the terminal raw (issue 35, 12).

Hostile strings (OSC 52 clipboard write, BEL, a screen clear, NUL, CR and a
newline that would forge a line, a bidi override, a C1 CSI) go into every
place a file holds text: database names, labels, notes, failure reasons,
metadata values, versions variants.  Every subcommand that prints them is
run in every format of the registry (so a new format is covered at once),
and its stdout and stderr are searched for a control character.
"""

from __future__ import annotations

import json
import re

import pytest
from sample_run import sample_result
from test_versions_parts import _versions

from zodbshootout.cli.entry import main
from zodbshootout.render.formats import FORMATS
from zodbshootout.render.safe_text import terminal_safe, terminal_safe_styled
from zodbshootout.results import file as resultfile
from zodbshootout.results import versions as versions_file

HOSTILE = "\x1b]52;c;SGVsbG8=\x07\x1b[2J\x00\r\nforged line\u202e\x9b31m\x1b[8m"
#: What a terminal obeys: every control character but tab and newline (which
#: separates the printed lines), and the bidi and line separator characters.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]"
)
MIX = __import__("pathlib").Path(__file__).parent / "golden" / "mix"


def _hostile(text: str, names: tuple[str, ...]) -> str:
    """A result document's JSON *text* with each of *names* made hostile, and its label."""
    for name in names:
        text = text.replace(json.dumps(name), json.dumps(name + HOSTILE))
    document = json.loads(text)
    metadata = document["metadata"]
    metadata["label"] = "label" + HOSTILE
    environment = metadata.setdefault("environment", {})
    environment.update(hostname="host" + HOSTILE, cpu_model="cpu" + HOSTILE)
    metadata["config"] = {"path": "conf" + HOSTILE, "text": "<zodb x>" + HOSTILE}
    document["notes"] = [*document.get("notes", []), "note" + HOSTILE]
    return json.dumps(document)


@pytest.fixture
def files(tmp_path):
    """Classic and mix pairs of hostile files, and a versions file of hostile variants."""
    paths = {}
    for index, scale in enumerate(({}, {"add": 1.5})):
        text = resultfile.dumps(sample_result(scale=scale))
        document = json.loads(_hostile(text, ("postgresql", "zeo_fs")))
        document["failures"][0]["reason"] += HOSTILE
        document["metadata"]["started"] += index
        path = tmp_path / f"classic{index}.json"
        path.write_text(json.dumps(document))
        paths[f"classic{index}"] = str(path)
    for name in ("base", "changed"):
        path = tmp_path / f"mix-{name}.json"
        path.write_text(_hostile((MIX / f"{name}.json").read_text(), ("sqlite", "zeo_fs")))
        paths[f"mix-{name}"] = str(path)
    saved = tmp_path / "versions.json"
    versions_file.save(_versions(), str(saved))
    text = saved.read_text()
    for name in ("old", "new"):
        text = text.replace(json.dumps(name), json.dumps(name + HOSTILE))
    saved.write_text(text)
    paths["versions"] = str(saved)
    paths["out"] = str(tmp_path / "chart.png")
    return paths


#: Each command on the hostile files, with {format} where it takes --format.
FORMATTED = {
    "show classic": ["show", "{classic0}"],
    "show mix": ["show", "{mix-base}"],
    "compare classic": ["compare", "{classic0}", "{classic1}"],
    "compare mix": ["compare", "{mix-base}", "{mix-changed}"],
    "history classic": ["history", "{classic0}", "{classic1}"],
    "history mix": ["history", "{mix-base}", "{mix-changed}"],
    "compare versions": ["compare", "{versions}"],
}
PLAIN = {
    "show --metadata classic": ["show", "{classic0}", "--metadata"],
    "show --metadata mix": ["show", "{mix-base}", "--metadata"],
    "plot classic pair": ["plot", "{classic0}", "{classic1}", "-o", "{out}"],
    "plot mix": ["plot", "{mix-base}", "-o", "{out}"],
}
CASES = [
    *(
        pytest.param([*argv, "--format", name], id=f"{what} --format {name}")
        for what, argv in FORMATTED.items()
        for name in FORMATS
    ),
    # A warning of a library (matplotlib's missing glyph) is shown, not an error.
    *(
        pytest.param(argv, id=what, marks=pytest.mark.filterwarnings("always::UserWarning"))
        for what, argv in PLAIN.items()
    ),
]


@pytest.mark.parametrize("argv", CASES)
def test_no_control_character_of_a_file_reaches_the_terminal(argv, files, capsys):
    code = main([word.format(**files) for word in argv])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    for stream in (out, err):
        for line in stream.split("\n"):
            assert not UNSAFE.search(line), f"{line!r}"
            assert not line.startswith("forged line"), f"a forged line: {line!r}"
    # The hostile text did reach the output, shown: the check above can fail.
    # (plot prints a file's text only in its warnings, when it has any.)
    if argv[0] != "plot":
        assert "\\u001b" in out + err


def test_the_escapes_keep_a_json_document_valid_with_the_same_values():
    document = json.dumps({"name": "a\u202eb\x9bc"}, ensure_ascii=False)
    assert UNSAFE.search(document)
    safe = terminal_safe(document)
    assert not UNSAFE.search(safe)
    assert json.loads(safe) == json.loads(document)


def test_colours_are_kept_only_where_a_format_styles_its_own_output():
    styled = "\x1b[1;32m12,345\x1b[0m " + terminal_safe("x\x1b]0;title\x07")
    assert terminal_safe_styled(styled).startswith("\x1b[1;32m12,345\x1b[0m x\\u001b]0;title")
    assert not UNSAFE.search(terminal_safe(styled))


def test_the_colour_table_shows_a_hostile_name_escaped(files):
    from zodbshootout.render.terminal import Terminal

    result = resultfile.load(files["classic0"])
    lines = Terminal(color=True, width=400).run(result)
    text = "\n".join(terminal_safe_styled(line) for line in lines)
    assert "\x1b[" in text  # the colours are there
    assert not re.search(r"\x1b(?!\[[0-9;]*m)", text)  # and no other escape
    assert "postgresql\\u001b]52" in text
