"""zodbshootout versions, its parts that need no process: variants, order, cache, files.

tests/integration/test_versions.py builds real environments and runs the
tool in them; here each part is checked on its own, against what pip, uv
and the statistics would say.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import replace

import pytest
from packaging.requirements import Requirement

from zodbshootout.cli.commands.versions import COMMAND, run_command
from zodbshootout.cli.subcommand import build_subcommand_parser
from zodbshootout.errors import UsageError
from zodbshootout.render.versions import format_variants
from zodbshootout.results import versions as versions_file
from zodbshootout.results.histogram import decode, encode, merge, new_histogram
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult
from zodbshootout.results.stats import cell_stats
from zodbshootout.results.versions import RoundRecord, VariantRecord, VersionsResult
from zodbshootout.versions import cache
from zodbshootout.versions.combine import combine_rounds
from zodbshootout.versions.environments import (
    decisive_line,
    fingerprint,
    requirements_of,
    tool_requirements,
)
from zodbshootout.versions.installers import Installer
from zodbshootout.versions.rounds import check_command
from zodbshootout.versions.schedule import round_orders
from zodbshootout.versions.variants import (
    Variant,
    name_variants,
    parse_variant,
    split_requirements,
    variants_from_options,
)

# --- What a variant is -----------------------------------------------------------


def test_commas_separate_requirements_but_not_a_version_range_or_extras():
    assert split_requirements("ZEO==6.1,ZODB==6.0") == ["ZEO==6.1", "ZODB==6.0"]
    assert split_requirements("ZEO>=6,<7, ZODB") == ["ZEO>=6,<7", "ZODB"]
    assert split_requirements("zodbshootout[postgresql,mysql]>=1") == [
        "zodbshootout[postgresql,mysql]>=1"
    ]


def test_a_variant_may_be_named_and_a_local_path_becomes_a_file_url(tmp_path, monkeypatch):
    (tmp_path / "pr").mkdir()
    monkeypatch.chdir(tmp_path)
    variant = parse_variant("pr=RelStorage @ ./pr,ZODB==6.0")
    assert variant.name == "pr"
    assert variant.requirements == (f"RelStorage @ file://{tmp_path}/pr", "ZODB==6.0")
    assert variant.local_paths == [tmp_path / "pr"]
    # What pip and uv are given parses as a URL requirement.
    assert Requirement(variant.requirements[0]).url == f"file://{tmp_path}/pr"
    # '==' is a version, not a name.
    assert parse_variant("ZEO==6.1").name is None
    assert parse_variant("ZEO~=6.1").requirements == ("ZEO~=6.1",)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ZEO==", "is not a requirement"),
        ("ZEO==6.1,,ZODB", "an empty requirement"),
        ("RelStorage @ ./no/such/checkout", "does not exist"),
    ],
)
def test_a_bad_variant_is_one_clear_line(text, says):
    with pytest.raises(UsageError, match=says) as raised:
        parse_variant(text)
    assert "\n" not in str(raised.value)


def test_pythons_pair_with_variants_or_apply_to_all_or_stand_alone():
    both = variants_from_options(["ZEO==6.1", "ZEO==6.2"], ["python3.12"])
    assert [v.python for v in both] == ["python3.12", "python3.12"]
    paired = variants_from_options(["ZEO==6.2", "ZEO==6.2"], ["python3.11", "python3.12"])
    assert [v.python for v in paired] == ["python3.11", "python3.12"]
    alone = variants_from_options([], ["old=python3.11", "python3.12"])
    assert [(v.name, v.python, v.requirements) for v in alone] == [
        ("old", "python3.11", ()),
        (None, "python3.12", ()),
    ]
    with pytest.raises(UsageError, match="3 --python for 2 --with"):
        variants_from_options(["a==1", "b==1"], ["p1", "p2", "p3"])
    with pytest.raises(UsageError, match="at least two variants"):
        variants_from_options(["ZEO==6.1"], [])


def test_names_are_the_requirements_then_the_python_then_a_number():
    variants = [
        Variant(("ZEO==6.2",)),
        Variant(("ZEO==6.2",), "python3.12"),
        Variant((), "python3.13"),
        Variant(("RelStorage @ file:///src/pr",)),
        Variant(("ZEO==6.1",), name="old"),
    ]
    named = name_variants(variants, ["3.11.7", "3.12.1", "3.13.0", "3.11.7", "3.11.7"])
    assert [v.name for v in named] == [
        "ZEO==6.2 (Python 3.11.7)",
        "ZEO==6.2 (Python 3.12.1)",
        "Python 3.13.0",
        "RelStorage @ pr",
        "old",
    ]
    twins = name_variants([Variant(("a==1",)), Variant(("a==1",))], ["3.11.7", "3.11.7"])
    assert [v.name for v in twins] == ["a==1 (Python 3.11.7) #1", "a==1 (Python 3.11.7) #2"]


# --- What an environment gets -------------------------------------------------------


def test_a_variant_overrides_the_tools_own_requirement_on_its_package():
    tools = tool_requirements()
    assert any(r.startswith("ZEO") for r in tools)
    wanted = requirements_of(Variant(("zeo==5.4.1", "ZODB==5.8.1")))
    names = [Requirement(r).name.lower() for r in wanted]
    assert names.count("zeo") == 1
    assert names.count("zodb") == 1
    assert wanted[-2:] == ["zeo==5.4.1", "ZODB==5.8.1"]
    # An extra brings its drivers (markers gone: they are chosen here); `all` names others.
    assert "psycopg2-binary>=2.9" in tool_requirements(("postgresql",))
    assert "PyMySQL>=1.1" in tool_requirements(("all",))
    assert not [r for r in tool_requirements(("all",)) if ";" in r or "zodbshootout" in r]


def test_the_cache_key_changes_with_what_is_installed_and_nothing_else():
    facts = {"requirements": ["ZEO==6.1"], "python": ["/usr/bin/python3", "3.11.7", "CPython"]}
    key = cache.environment_key(facts)
    assert key == cache.environment_key(json.loads(json.dumps(facts)))
    assert len(key) == cache.KEY_LENGTH
    assert key != cache.environment_key({**facts, "requirements": ["ZEO==6.2"]})
    assert key != cache.environment_key({**facts, "python": ["/usr/bin/python3", "3.12.1", "C"]})


def test_a_checkouts_fingerprint_follows_its_contents_not_its_times(tmp_path):
    (tmp_path / "src").mkdir()
    source = tmp_path / "src" / "module.py"
    source.write_text("x = 1\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_text("a")
    first = fingerprint(tmp_path)
    source.touch()
    (tmp_path / ".git" / "index").write_text("b")  # git's own files don't count
    assert fingerprint(tmp_path) == first
    source.write_text("x = 2\n")
    assert fingerprint(tmp_path) != first


def test_clearing_the_cache_removes_only_its_own_entries(tmp_path):
    environments = cache.environments_directory(tmp_path)
    complete = environments / ("a" * cache.KEY_LENGTH)
    unfinished = environments / ("b" * cache.KEY_LENGTH)
    stranger = environments / "my-notes"
    for directory in (complete, unfinished, stranger):
        (directory / "venv").mkdir(parents=True)
    cache.mark_complete(complete, {"variant": "x"})
    assert cache.is_complete(complete)
    assert not cache.is_complete(unfinished)
    assert cache.read_record(complete) == {"variant": "x"}
    assert cache.entries(tmp_path) == [complete, unfinished]
    assert cache.clear(tmp_path) == [complete, unfinished]
    assert [p.name for p in environments.iterdir()] == ["my-notes"]


def test_the_cache_directory_follows_the_option_then_the_variables(tmp_path, monkeypatch):
    monkeypatch.delenv(cache.CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_directory() == tmp_path / "xdg" / "zodbshootout"
    monkeypatch.setenv(cache.CACHE_VARIABLE, str(tmp_path / "mine"))
    assert cache.cache_directory() == tmp_path / "mine"
    assert cache.cache_directory(str(tmp_path / "chosen")) == tmp_path / "chosen"


def test_the_installers_commands(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    pip = Installer("pip")
    assert pip.create("/usr/bin/python3.12", tmp_path) == ["/usr/bin/python3.12", "-m", "venv",
                                                           str(tmp_path)]  # fmt: skip
    assert pip.install(python, ["ZEO==6.1"])[:4] == [str(python), "-m", "pip", "install"]
    uv = Installer("uv", "/opt/uv")
    assert uv.create("/usr/bin/python3.12", tmp_path)[:2] == ["/opt/uv", "venv"]
    assert uv.install(python, ["ZEO==6.1"]) == [
        "/opt/uv", "pip", "install", "--python", str(python), "ZEO==6.1",
    ]  # fmt: skip


def test_an_installers_failure_is_its_decisive_line():
    pip = (
        "Collecting ZODB>=6.0\n"
        "ERROR: Could not find a version that satisfies the requirement ZEO==0.404 "
        "(from versions: 4.0.0, 6.2)\n"
        "ERROR: No matching distribution found for ZEO==0.404\n"
    )
    assert decisive_line(pip) == "ERROR: No matching distribution found for ZEO==0.404"
    uv = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because there is no version of zeo==0.404 and you require zeo==0.404, we can "
        "conclude that your requirements are unsatisfiable.\n"
    )
    line = decisive_line(uv)
    assert line.startswith("No solution found when resolving dependencies: Because there")
    offline = (
        "error: Request failed after 3 retries\n"
        "  cause: error sending request for url (http://127.0.0.1:9/simple/rich/)\n"
    )
    assert decisive_line(offline).startswith("the package index could not be reached")
    assert decisive_line("x" * 1000).endswith("…")
    assert len(decisive_line("x" * 1000)) <= 400


# --- Rounds -------------------------------------------------------------------------


def test_alternate_rounds_put_each_variant_first_as_often_as_last():
    orders = round_orders(3, 4)
    assert orders == [[0, 1, 2], [2, 1, 0], [0, 1, 2], [2, 1, 0]]
    firsts = [order[0] for order in round_orders(2, 4)]
    assert firsts.count(0) == firsts.count(1) == 2


def test_shuffled_rounds_hold_every_variant_once_and_repeat_with_the_seed():
    orders = round_orders(4, 20, "shuffle", seed=7)
    assert all(sorted(order) == [0, 1, 2, 3] for order in orders)
    assert orders == round_orders(4, 20, "shuffle", seed=7)
    assert len({tuple(order) for order in orders}) > 1


def test_options_versions_sets_itself_are_refused_for_the_runs():
    check_command(["etc/local.conf", "-n", "10", "--label", "x"])
    for option in ("-o", "--output=x.json", "--save-to", "--pyperf"):
        with pytest.raises(UsageError, match="for versions itself"):
            check_command(["etc/local.conf", option])


def build_parser():
    return build_subcommand_parser("versions", COMMAND)


def test_the_run_command_from_config_and_the_words_after_the_dashes(tmp_path):
    config = tmp_path / "local.conf"
    config.write_text("")
    args = build_parser().parse_args([str(config), "--with", "a==1"])
    assert run_command(args, ["-n", "5"]) == [str(config), "-n", "5"]
    mix = build_parser().parse_args([str(config), "--mix", "--with", "a==1"])
    assert run_command(mix, ["--duration", "2"]) == ["mix", str(config), "--duration", "2"]
    whole = build_parser().parse_args(["--with", "a==1"])
    assert run_command(whole, ["mix", str(config)]) == ["mix", str(config)]
    with pytest.raises(UsageError, match="name the configuration"):
        run_command(whole, [])
    with pytest.raises(UsageError, match="no such configuration file"):
        run_command(build_parser().parse_args([str(tmp_path / "nope.conf")]), [])


def test_the_words_after_the_dashes_are_passed_on_not_parsed(tmp_path, capsys):
    from zodbshootout.cli.entry import main

    # -o after -- is a run's option: refused as one versions sets itself, before any build.
    code = main(["versions", "--with", "a==1", "--with", "a==2", "--", "x.conf", "-o", "y"])
    assert code == 2
    assert "-o is for versions itself" in capsys.readouterr().err


# --- Rounds added up --------------------------------------------------------------


def _run(rates: list[float], warmup: bool = True) -> RunResult:
    """A classic run of one cell whose repetitions ran at *rates* objects per second."""
    result = RunResult(["db"], [100], [1], ["cold"], len(rates), metadata={"finished": 5.0})
    if warmup:
        timing = PhaseTiming("cold", 0, 1.0, 100, 100, 100, 0)
        result.measurements.append(Measurement("db", 1, 100, 0, timing, warmup=True))
    for repetition, rate in enumerate(rates, start=1):
        timing = PhaseTiming("cold", 0, 100 / rate, 100, 100, 100, 0)
        result.measurements.append(Measurement("db", 1, 100, repetition, timing))
    return result


def test_rounds_add_up_to_one_run_of_every_repetition():
    first, second = _run([100.0, 200.0]), _run([300.0, 400.0])
    second.metadata = {"finished": 9.0, "load_average": {"db": {"before": 3.0}}}
    combined = combine_rounds([first, second])
    stats = cell_stats(combined, next(iter(combined.cell_keys())))
    assert stats is not None
    assert sorted(stats.rates) == pytest.approx([100.0, 200.0, 300.0, 400.0])
    assert combined.repetitions == 4
    assert [m.repetition for m in combined.measurements if m.warmup] == [0, 0]
    assert combined.metadata["finished"] == 9.0
    assert combined.metadata["load_average"] == {"db": {"before": 3.0}}
    # The rounds themselves are untouched.
    assert [m.repetition for m in second.measurements] == [0, 1, 2]


def _mix_record(latencies: list[int], intervals: int) -> dict:
    histogram = new_histogram()
    for value in latencies:
        histogram.record_value(value)
    return {
        "database": "db",
        "concurrency": 1,
        "workload": "a",
        "seconds": 2.0,
        "operations": {
            "read": {
                "count": len(latencies),
                "latency": encode(histogram),
                "service": None,
                "conflicts": {"ConflictError": 1},
                "retries": 1,
                "failures": {},
                "lag_sum_seconds": 0.0,
                "lag_max_seconds": 0.0,
            }
        },
        "intervals": [{"transactions": 5}] * intervals,
        "increments": 3,
        "warmup_increments": 0,
        "changes_found": 3,
        "counters": {"loads": 10, "cache_hits": None},
    }


def test_mix_rounds_add_their_histograms_and_follow_each_others_intervals():
    rounds = []
    for latencies, intervals in (([100, 200], 2), ([300, 400, 500], 3)):
        result = RunResult(["db"], [1], [1], [], 1, metadata={"mix": {}})
        result.mix = [_mix_record(latencies, intervals)]
        rounds.append(result)
    record = combine_rounds(rounds).mix[0]
    read = record["operations"]["read"]
    assert read["count"] == 5
    assert read["retries"] == 2
    assert read["conflicts"] == {"ConflictError": 2}
    both = merge([r.mix[0]["operations"]["read"]["latency"] for r in rounds])
    assert decode(read["latency"]).get_total_count() == both.get_total_count() == 5
    assert len(record["intervals"]) == 5
    assert record["seconds"] == 4.0
    assert record["counters"] == {"loads": 20, "cache_hits": None}
    assert "changes_found" not in record  # each round checked its own dataset


# --- The versions file ----------------------------------------------------------------


def _versions() -> VersionsResult:
    variants = [
        VariantRecord(
            name,
            [f"ZEO=={zeo}"],
            {
                "requested": "",
                "executable": "/usr/bin/python3",
                "version": "3.11.7",
                "implementation": "CPython",
            },
            "uv 0.9.9",
            {"key": "k" + name, "path": "/cache/x", "built": name == "new", "build_seconds": 4.2},
            {"ZEO": zeo, "ZODB": "6.4"},
            _run(rates),
        )
        for name, zeo, rates in (("old", "6.1", [100.0, 110.0]), ("new", "6.2", [50.0, 55.0]))
    ]
    rounds = [
        RoundRecord(1, 1, "old", 10.0, 11.0, 0),
        RoundRecord(1, 2, "new", 11.0, 12.0, 0),
    ]
    return VersionsResult(["etc/local.conf"], "alternate", None, 1, variants, rounds, 10.0, 12.0)


def test_the_versions_file_reads_back_and_compare_finds_its_variants(tmp_path):
    path = tmp_path / "versions.json"
    versions_file.save(_versions(), str(path))
    loaded = versions_file.load(str(path))
    assert [v.packages["ZEO"] for v in loaded.variants] == ["6.1", "6.2"]
    assert loaded.rounds == _versions().rounds
    runs = versions_file.load_runs(str(path))
    assert [name for name, _result in runs] == ["old", "new"]
    assert [name for name, _result in versions_file.load_runs(f"{path}#new")] == ["new"]
    with pytest.raises(UsageError, match="no variant 'newer'"):
        versions_file.load_runs(f"{path}#newer")


def test_a_damaged_versions_file_is_refused_in_one_line(tmp_path):
    document = versions_file.to_document(_versions())
    document["rounds"][0]["variant"] = "someone else"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError, match="names no variant"):
        versions_file.load(str(path))
    del document["variants"][0]["packages"]
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError, match="is damaged: KeyError"):
        versions_file.load(str(path))


def test_the_variants_table_shows_the_packages_that_differ():
    lines = format_variants(_versions(), "markdown")
    assert lines[0] == "| variant | Python | ZEO | environment |"
    assert lines[2] == "| old | 3.11.7 | 6.1 | uv 0.9.9, cached |"
    assert lines[3] == "| new | 3.11.7 | 6.2 | uv 0.9.9, built in 4 s |"
    assert "1 round(s) of 2 variants, interleaved (alternate)" in lines[5]
    assert format_variants(_versions(), "json") == []
    interrupted = replace(_versions(), interrupted=True, rounds_planned=4)
    assert "(interrupted: 1 of 4 rounds)" in format_variants(interrupted, "table")[-2]


def test_the_first_variant_is_compares_base(tmp_path, capsys):
    from zodbshootout.cli.entry import main

    path = tmp_path / "versions.json"
    versions_file.save(_versions(), str(path))
    assert main(["compare", str(path), "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert "old" in out.out
    assert "new" in out.out
    # show reads one run: it says which subcommand reads the file.
    assert main(["show", str(path)]) == 2
    assert "is a versions file (zodbshootout versions -o): only compare" in capsys.readouterr().err
    # Only a variant: compare needs two runs.
    assert main(["compare", f"{path}#old"]) == 2
    assert "compare needs two runs" in capsys.readouterr().err
    # New against old picked by name: the order the user gives.
    assert main(["compare", f"{path}#new", f"{path}#old", "--format", "json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert json.dumps(comparison).index('"new"') < json.dumps(comparison).index('"old"')


def test_fingerprint_of_a_file(tmp_path):
    wheel = tmp_path / "x.whl"
    wheel.write_bytes(b"1")
    first = fingerprint(wheel)
    wheel.write_bytes(b"2")
    assert fingerprint(wheel) != first
    assert pathlib.Path(wheel).exists()
