"""One format registry: a format registered once is offered and used by every subcommand.

The toy format of tests/support/toy_format.py is added to the registry in
one place (its ``register``); no subcommand module is touched, yet each
subcommand with --format lists it in its --help, accepts it, and prints its
shape of result with it.  The run and ``mix`` itself print with it too
(tests/integration/test_toy_format.py: they start workers).
"""

import argparse
import pathlib

import pytest
from sample_run import sample_result

from zodbshootout.cli.arguments import build_parser
from zodbshootout.cli.commands import COMMANDS, load_command
from zodbshootout.cli.entry import main
from zodbshootout.cli.subcommand import build_subcommand_parser
from zodbshootout.render.formats import FORMATS, Format, format_names, get_format
from zodbshootout.results import file as resultfile

from support import toy_format

MIX_RUNS = pathlib.Path(__file__).parent / "golden" / "mix"

#: The subcommands that print a table, so take --format.
WITH_FORMAT = {"show", "compare", "history", "cachesim", "mix", "versions", "replay", "maintain"}


@pytest.fixture
def toy(monkeypatch):
    toy_format.register(monkeypatch)
    return toy_format.NAME


def _format_action(parser: argparse.ArgumentParser):
    return next((a for a in parser._actions if "--format" in a.option_strings), None)


def _parsers():
    yield "the run", build_parser()
    for name in COMMANDS:
        yield name, build_subcommand_parser(name, load_command(name))


def test_every_registered_format_is_a_format_and_lists_its_default_first():
    for name in FORMATS:
        assert isinstance(get_format(name), Format), name
    assert format_names("csv") == ["csv", "markdown", "json", "table"]
    assert format_names("table") == ["table", "markdown", "csv", "json"]


def test_the_subcommands_with_a_table_are_those_with_format(toy):
    with_format = {name for name, parser in _parsers() if _format_action(parser)}
    assert with_format == WITH_FORMAT | {"the run"}


def test_every_format_option_offers_the_registered_format_in_its_help(toy):
    for name, parser in _parsers():
        action = _format_action(parser)
        if action is None:
            continue
        assert toy in action.choices, name
        text = parser.format_help()
        assert "markdown" in text, name
        # The choices in the usage, and the format named in the option's help.
        assert f",{toy}}}" in text.replace("\n", "").replace(" ", ""), name
        assert f" {toy}" in action.help or action.help.endswith(toy), (name, action.help)


def _printed(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_show_compare_and_history_print_a_classic_run_with_it(toy, tmp_path, capsys):
    paths = []
    for name in ("base", "changed"):
        result = sample_result()
        result.metadata["label"] = name
        paths.append(str(tmp_path / f"{name}.json"))
        resultfile.save(result, paths[-1])
    show = _printed(capsys, "show", paths[0], "--format", toy)
    assert show == "toy run (mean): postgresql, zeo_fs\n"
    compare = _printed(capsys, "compare", *paths, "--format", toy)
    assert compare == "toy comparison: base -> changed\n"
    history = _printed(capsys, "history", *paths, "--format", toy, "-q")
    assert history == "toy history (mean): base, changed\n"


def test_show_compare_and_history_print_a_mix_run_with_it(toy, capsys):
    base, changed = (str(MIX_RUNS / f"{name}.json") for name in ("base", "changed"))
    assert _printed(capsys, "show", base, "--format", toy) == (
        "toy mix: zeo_fs, sqlite, zeo_pcache\n"
    )
    compare = _printed(capsys, "compare", base, changed, "--format", toy)
    assert compare == "toy mix comparison: base -> changed\n"
    history = _printed(capsys, "history", base, changed, "--format", toy)
    assert history == "toy mix history: base, changed\n"


def test_cachesim_prints_with_it(toy, tmp_path, capsys):
    trace = tmp_path / "t.spc"
    trace.write_text("0,20941264,8192,W,0.55\n0,20939840,8192,r,0.56\n1,20941264,512,R,0.57\n")
    printed = _printed(capsys, "cachesim", str(trace), "--sizes", "64KB", "--format", toy)
    assert printed == "toy simulation: t.spc\n"


def test_a_run_saved_in_the_format_shows_in_it_again(toy, tmp_path, capsys):
    result = sample_result()
    result.metadata["format"] = toy
    path = str(tmp_path / "run.json")
    resultfile.save(result, path)
    assert _printed(capsys, "show", path) == "toy run (mean): postgresql, zeo_fs\n"


def test_without_the_registry_line_no_subcommand_knows_it(capsys, tmp_path):
    path = str(tmp_path / "run.json")
    resultfile.save(sample_result(), path)
    assert main(["show", path, "--format", toy_format.NAME]) == 2
    assert "invalid choice: 'toy'" in capsys.readouterr().err
