"""Throw many bad inputs at the real command line and count what comes back.

Not a test: a measurement to run by hand (a few minutes), the adversarial
re-run of issue 24.  Every case runs ``python -m zodbshootout ...`` as a user
would, inside one temporary directory (also its TMPDIR), and is judged:

good
    exit 2 with one line on stderr and nothing on stdout (a usage error);
    exit 1 with a footnote giving each failed cell's reason, where a cell was
    made to fail; exit 0 where the input may well be fine (a fuzzed file
    that happens to stay valid).
bad
    ``internal error`` or ``Traceback`` in the output; no exit within the
    case's time limit (a hang); exit 0 where a failure was expected (silent);
    exit 2 with more than one line or a line longer than 2000 characters;
    exit 1 without a reason for the failed cell; any other exit code; a
    user's store or file that changed; a control character (but tab and
    newline) in stdout or stderr.

The families of cases: options of a run, configurations (generated and
hostile: FIFOs, device nodes made with mknod inside the directory, includes
through ``%define``, storage paths that are no files), result files given to
show / compare / history / export / plot / report (hostile values anywhere in
a real document, and malformed files), cachesim on bad traces and
directories, ``<rawkv>`` sections pointing at a user's stores, output
targets that are no regular files, and worker and populate faults (the
test-only ``ZODBSHOOTOUT_FAULT`` hook).  Round 4 (issue 35) adds report
directories that are someone else's (``report``), outputs another process
holds or whose lock name is taken (``lock``), progress intervals
(``options``), and escape sequences in every string of a result, mix or
versions file, shown by every subcommand in every format (``terminal``), and
servers that die mid-run (``death``): a private ZEO, PostgreSQL or MariaDB
server of the case's own (never the machine's shared ones), killed by PID
when the command's progress reaches the case's point, in the classic run
(populate, write, read) and in ``mix`` (dataset load, measuring, read-back),
and ``mix`` on servers nobody runs.  Every case's command runs in a session
of its own: a process of it still alive 20 s after it exited is bad.
Every case's output is also searched for control characters: a file's ESC,
BEL, NUL or CR reaching the terminal is bad whatever the exit code.  No
case writes to a device: device nodes are only ever read from.

The generators are the tests' own (``tests/support/hostile.py``).  Usage,
from a checkout, in the venv that has zodbshootout installed::

    python benchmarks/adversarial.py                 # about 1,400 cases, 7 minutes
    python benchmarks/adversarial.py --scale 0.3 -j 2
    python benchmarks/adversarial.py --family result --log bad.txt

It prints one line per family and the bad cases (argv, exit code, the start
of the output); ``--log`` writes every case's outcome.  Exit code: 0 if no
case was bad, 1 otherwise.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import concurrent.futures
import copy
import gzip
import json
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import stat
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "unit")]

from support import hostile  # noqa: E402

USAGE = frozenset({2})
CELL_FAILED = frozenset({1})
ANY = frozenset({0, 1, 2})
CLEAN = frozenset({0, 2})  # a subcommand on a fuzzed file: fine or refused


def section(kind: str, *body: str, name: str = "") -> str:
    """A ZConfig section of *kind* holding the lines or sections *body*, indented."""
    head = f"<{kind} {name}>" if name else f"<{kind}>"
    inner = "".join(f"  {line}\n" for text in body for line in text.splitlines())
    return f"{head}\n{inner}</{kind}>\n"


def sqlite(name: str, directory: object) -> str:
    return section(
        "zodb", section("relstorage", section("sqlite3", f"data-dir {directory}")), name=name
    )


IN_MEMORY = section("zodb", "<mappingstorage/>", name="mem")


QUICK_THREADS = ["-n", "5", "-c", "1", "-r", "1", "-q", "--threads", "add"]
QUICK = ["-n", "5", "-c", "1", "-r", "1", "-q", "add"]


@dataclass
class Case:
    family: str
    name: str
    argv: list[str]
    expect: frozenset[int]
    timeout: float = 60.0
    env: dict[str, str] = field(default_factory=dict)
    #: After the run: why the case is bad although its exit looked right, or None.
    check: Callable[[], str | None] | None = None
    #: Kept alive while the case runs (a listening socket).
    keep: object = None
    #: With exit 0: what stderr must say (a skipped file's warning).
    warns: str = ""
    #: Text that must appear nowhere in the output (parts of a password).
    secrets: list[str] = field(default_factory=list)
    #: With exit 0: text that may start a line on stderr but never appear inside one,
    #: nor leave an empty line (two lines written at once mix as "AB" and two newlines).
    prefix: str = ""
    #: A private server the case starts before its command and kills mid-run,
    #: or a signal it sends the command mid-run.
    server: Doomed | Interrupter | None = None
    #: With exit 1 from mix: the one line on stderr that says why a database failed.
    failed_line: str = ""
    #: What every line on stderr starts with (the tool's own), when not empty.
    own_lines: tuple[str, ...] = ()


@dataclass
class Outcome:
    case: Case
    verdict: str  # "usage", "cell failed", "accepted", or what was bad
    good: bool
    code: int | None
    seconds: float
    output: str


class Sandbox:
    """The temporary directory every case lives in, and makers of hostile paths in it."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self._count = 0

    def directory(self, hint: str) -> pathlib.Path:
        self._count += 1
        path = self.root / f"{self._count:04d}-{re.sub(r'[^a-z0-9]+', '-', hint.lower())[:30]}"
        path.mkdir()
        return path

    def file(self, hint: str, content: str | bytes, name: str = "") -> pathlib.Path:
        path = self.directory(hint) / (name or hint)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
        else:
            path.write_bytes(content)
        return path

    def fifo(self, hint: str, name: str = "pipe") -> pathlib.Path:
        path = self.directory(hint) / name
        os.mkfifo(path)
        return path

    def zero_device(self, hint: str, name: str = "zero") -> pathlib.Path | None:
        """A node like /dev/zero (1, 5), only ever read from; None without root."""
        path = self.directory(hint) / name
        try:
            os.mknod(path, 0o444 | stat.S_IFCHR, os.makedev(1, 5))
        except PermissionError:
            return None
        return path

    def sparse(self, hint: str, size: int, name: str = "huge") -> pathlib.Path:
        path = self.directory(hint) / name
        with open(path, "wb") as file:
            file.truncate(size)
        return path

    def socket(self, hint: str) -> tuple[pathlib.Path, socket.socket]:
        path = self.directory(hint) / "sock"
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        return path, server


# --- the families ---------------------------------------------------------------------


def option_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    config = str(box.file("mem.conf", IN_MEMORY))
    named = [
        ["-n", "0"],
        ["-c", "-1"],
        ["-n", "abc"],
        ["-n", "10,"],
        ["-r", "0"],
        ["-s", "x"],
        ["--timeout", "0"],
        ["--timeout", "nan"],
        ["--timeout", "1e400"],
        ["--aggregate", "max"],
        ["chilly"],
        ["--no-such-option"],
        ["--index-entries", "-1"],
        ["--index-entries", "1000000000"],
        ["--index-entries", "1000000"],
        ["-n", "1000000", "-s", "1000", "-c", "256"],
        ["-n", str(10**30)],
        ["-c", "100000"],
        ["-r", str(10**9)],
        ["-s", str(10**13)],
        ["--min-objects", "-1"],
        ["--min-objects", str(10**13)],
        ["--precision", "0"],
        ["--precision", "-5"],
        ["--max-time", "-1"],
        ["--label", "L" * 10_000],
        ["-n", "x" * 10_000],
        ["--btrees=XX"],
        ["--format", "xml"],
        ["--zap", "nosuchdb"],
        ["--zap=force,nosuchdb"],
        ["--hosts", "nohost.invalid:1:2:3"],
        ["--hosts", str(box.directory("no-hosts-file") / "missing")],
        ["--hosts", str(box.fifo("hosts-fifo"))],
        ["--hosts", str(box.sparse("hosts-huge", 64 << 20))],
        ["--hosts", str(box.file("hosts-binary", b"\xff\xfe\x00ssh=x"))],
        ["--log", "VERBOSE"],
        ["--log", str(box.directory("no-log") / "missing.conf")],
        ["--log", str(box.fifo("log-fifo"))],
        ["--cache-trace", "traces", "--threads"],
        ["-c", "0,1"],
        ["-p", str(box.file("p-file", "not a directory\n"))],
        ["-o", ""],
        ["--save-to", str(box.file("save-file", "x"))],
    ]
    # After a quick run's options, so that one accepted by mistake ends soon.
    quick = ["-n", "5", "-c", "1", "-r", "1", "-q", "--threads"]
    cases = [Case("options", " ".join(o)[:60], [config, *quick, *o], USAGE) for o in named]
    # Generated as test_bad_input generates them: no configuration file at all.
    missing = str(box.root / "missing.conf")
    for index in range(int(60 * scale)):
        argv = [missing]
        for _ in range(rng.randint(0, 5)):
            kind = rng.randrange(4)
            if kind == 0:
                argv += [rng.choice(hostile.NUMBER_OPTIONS), _numberish(rng)]
            elif kind == 1:
                argv += [rng.choice(hostile.COUNT_OPTIONS), _numberish(rng)]
            elif kind == 2:
                argv += ["--aggregate", rng.choice(hostile.AGGREGATES)]
            else:
                argv.append(rng.choice(hostile.PHASE_WORDS) or _text(rng, string.ascii_letters))
        cases.append(Case("options", f"generated {index}", argv, USAGE))
    # mix: its own options.
    for o in (["-d", "-1"], ["-d", "nan"], ["-n", "0"], ["--rate", "-3"], ["-w", "ycsb-z"]):
        cases.append(Case("options", "mix " + " ".join(o), ["mix", config, "--threads", *o], USAGE))
    return cases + _interval_cases(config)


def _interval_cases(config: str) -> list[Case]:
    """Progress intervals too short, or too many of them (issue 35, 7); the bound runs."""
    mix = ["mix", config, "--threads", "-n", "20", "--warmup", "0", "-q"]
    cases = [
        Case("options", f"mix {' '.join(o)}", [*mix, *o], USAGE, 30.0)
        for o in (
            ["-d", "1", "--interval", "1e-9"],
            ["-d", "1", "--interval", "1e-5"],
            ["-d", "1", "--interval", "0.05"],
            ["-d", "1", "--interval", "1e-300"],
            ["-d", "1", "--interval", "-0.0"],
            ["-d", "1", "--interval", "0x1p-20"],
            ["-d", "86400", "--interval", "0.5"],
            ["-d", "1e7"],
        )
    ]
    bound = ["-d", "0.5", "--interval", "0.1"]
    cases.append(Case("options", "mix " + " ".join(bound), [*mix, *bound], frozenset({0}), 60.0))
    return cases


def bound_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Issue 35, items 8-11: numbers, mix's limits, --debug, global options, hosts, lines."""
    config = str(box.file("mem.conf", IN_MEMORY))
    cases = _generated_number_cases(config, rng, scale)
    mix = ["mix", config, "--threads", "-n", "50", "--warmup", "0", "-d", "0.3"]
    named = [
        # Numbers no option takes, in the forms the issue found and others.
        ["--warmup", "nan"], ["-d", "inf"], ["--rate", "inf"], ["--rate", "1e-320"],
        ["--mix", "read=inf"], ["--mix", "read=1e308,update=1e308"], ["--mix", "read=-0.0"],
        ["--mix", "scan=nan,read=1"], ["--timeout", "inf"], ["--timeout", "1e-9"],
        ["-d", "1e-300"], ["--mix", ""], ["--mix", ","], ["--seed", "1e3"],
        ["--seed", str(2**64)], ["--max-tries", "1e9"], ["-k", "0x10"], ["-s", "1_2_8e0"],
        # mix's limits, the classic run's.
        ["-c", "300"], ["-s", "100000000", "-n", "100"],
        ["-c", "256", "-n", "100000", "-s", "100000"],
        ["-w", "ycsb-e", "--scan-length", "1000000", "-s", "2000"],
        ["--mix", "readcurrent=1", "-k", "600000", "-s", "1000"],
    ]  # fmt: skip
    cases += [Case("bounds", "mix " + " ".join(o)[:50], [*mix, *o], USAGE) for o in named]
    debug = [
        ["mix", config, "--debug", "--bogus"],
        ["show", str(box.root / "none.json"), "--debug", "--bogus"],
        ["cachesim", str(box.root / "none.trace"), "--sizes", "inf", "--debug"],
        ["compare", "a.json", "b.json", "--fail-if-slower", "nan", "--debug"],
        [config, "--debug", "-n", "0"],
        ["--debug", "mix", config, "-c", "0"],
    ]
    cases += [Case("bounds", "debug " + " ".join(o)[-40:], o, USAGE) for o in debug]
    cases += _global_option_cases(box, config)
    cases += _hosts_cases(box, config)
    # Progress lines from the mix's progress thread and its runner, with threads.
    say = [*mix[:3], "-c", "8", "-n", "200", "-d", "2.5", "--warmup", "0.5"]
    cases.append(Case("bounds", "mix lines whole", say, ANY, prefix="zodbshootout mix: "))
    return cases


def _generated_number_cases(config: str, rng: random.Random, scale: float) -> list[Case]:
    """Every numeric option of every parser with hostile numbers (as the unit test walks them)."""
    from zodbshootout.cli.arguments import build_parser
    from zodbshootout.cli.commands import COMMANDS, load_command
    from zodbshootout.cli.numbers import Numeric
    from zodbshootout.cli.subcommand import build_subcommand_parser

    parsers = [("", build_parser())]
    parsers += [(n, build_subcommand_parser(n, load_command(n))) for n in COMMANDS]
    hostile = ["nan", "-inf", "inf", "1e308", "9" * 330, "+NaN", "-1e309", "Infinity"]
    quick = {
        "": [config, "--threads", "-n", "5", "-r", "1"],
        "mix": ["mix", config, "--threads", "-n", "50", "-d", "0.3", "--warmup", "0"],
    }
    cases = []
    for name, parser in parsers:
        for action in parser._actions:
            kind = action.type
            if not isinstance(kind, Numeric) or not action.option_strings:
                continue
            values = rng.sample(hostile, max(1, round(3 * scale))) + kind.outside()[:1]
            for value in values:
                form = rng.choice(kind.hostile_forms(value))
                argv = [*quick.get(name, [name, config]), f"{action.option_strings[-1]}={form}"]
                label = f"{name or 'run'} {action.option_strings[-1]}={form}"[:60]
                cases.append(Case("bounds", label, argv, USAGE))
    return cases


def _global_option_cases(box: Sandbox, config: str) -> list[Case]:
    """Options before a subcommand: the subcommand's, or refused in one line."""
    quick = ["-n", "5", "-c", "1", "-r", "1", "-q", "--threads", "add"]
    return [
        Case("bounds", "--log x mix", ["--log", "x", "mix", config], USAGE),
        Case("bounds", "--zap mix", ["--zap", "mix", config], USAGE),
        Case("bounds", "-n 5 show", ["-n", "5", "show", str(box.root / "none.json")], USAGE),
        Case("bounds", "--debug show missing", ["--debug", "show", "none.json"], USAGE),
        Case("bounds", "--label mix run", ["--label", "mix", config, *quick], frozenset({0})),
        Case("bounds", "-q mix", ["-q", "mix", config, "--threads", "-d", "0.2", "-n", "20"], ANY),
    ]


def _hosts_cases(box: Sandbox, config: str) -> list[Case]:
    """Hosts files with extra fields, and directories, refused in one line."""
    (box.root.parent / "cwd" / "clients").mkdir(exist_ok=True)  # a name without a slash
    lines = ["localhost 1 2", "localhost python=/a python=/b", "localhost 2 extra=1", "a b c d"]
    files = [str(box.file(f"hosts-{i}", f"{line}\n")) for i, line in enumerate(lines)]
    cases = []
    for target in [*files, "clients", str(box.directory("hosts-dir"))]:
        for head in (["mix", config], [config, "-n", "5", "-r", "1"]):
            argv = [*head, "--hosts", target]
            cases.append(Case("bounds", f"{head[0][-8:]} --hosts {target[-20:]}", argv, USAGE))
    return cases


def _numberish(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        return str(rng.randint(-5, 5))
    if kind == 1:
        return _text(rng, hostile.NUMBERISH_ALPHABET, 6)
    return _text(rng, string.printable, 8)


def _text(rng: random.Random, alphabet: str, most: int = 8) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, most)))


class Configs:
    """Adds a case per configuration text, each in its own directory."""

    def __init__(self, box: Sandbox) -> None:
        self.box = box
        self.cases: list[Case] = []

    def add(
        self,
        name: str,
        text: str | bytes,
        expect: frozenset[int] = USAGE,
        argv: list[str] = QUICK_THREADS,
        **kw: object,
    ) -> None:
        path = self.box.file(name, text, "test.conf")
        self.cases.append(Case("config", name, [str(path), *argv], expect, **kw))  # type: ignore[arg-type]

    def path(self, name: str, path: pathlib.Path) -> None:
        self.cases.append(Case("config", name, [str(path), *QUICK_THREADS], USAGE))


def config_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    configs = Configs(box)
    _generated_configs(configs, rng, scale)
    _hostile_config_files(configs)
    _storage_paths(configs)
    _unreachable_servers(configs)
    return configs.cases


def _generated_configs(configs: Configs, rng: random.Random, scale: float) -> None:
    """Generated as test_bad_input generates them; run, since some may be fine."""
    for index in range(int(100 * scale)):
        lines = []
        for _ in range(rng.randint(0, 8)):
            kind = rng.choice(["open", "close", "empty", "key"])
            kind_name = rng.choice(hostile.SECTION_TYPES)
            if kind == "open":
                lines.append(f"<{kind_name} {rng.choice(hostile.SECTION_NAMES)}>")
            elif kind == "close":
                lines.append(f"</{kind_name}>")
            elif kind == "empty":
                lines.append(f"<{kind_name}/>")
            elif rng.random() < 0.7:
                lines.append(rng.choice(hostile.CONFIG_KEY_LINES))
            else:
                lines.append(_text(rng, string.printable, 20))
        text = "\n".join(lines) + "\n"
        scratch = str(configs.box.directory(f"gen-{index}"))  # not /tmp/never
        configs.add(f"generated {index}", text.replace("/tmp/never", scratch), ANY, QUICK)


def _hostile_config_files(configs: Configs) -> None:
    """Hostile files as the configuration, and reached through includes."""
    box = configs.box
    targets = {
        "fifo": box.fifo("config-fifo"),
        "huge": box.sparse("config-huge", (1 << 20) + 1),
        "binary": box.file("config-binary", b"\x89PNG\r\n\x1a\n\xff\xfe\x00", "blob.bin"),
        "directory": box.directory("dir"),
        "zero device": box.zero_device("config-zero"),
    }
    for what, path in targets.items():
        if path is None:
            continue
        configs.path(f"config is {what}", path)
        mix = ["mix", str(path), "--threads", "-d", "1", "-q"]
        configs.cases.append(Case("config", f"mix config is {what}", mix, USAGE))
        configs.add(f"include of {what}", f"%include {path}\n")
        through_define = f"%define d {path.parent}\n%include $d/{path.name}\n"
        configs.add(f"define include of {what}", through_define)
        log_config = box.file(f"log include {what}", through_define)
        log = [*QUICK_THREADS, "--log", str(log_config)]
        configs.add(f"--log including {what}", IN_MEMORY, USAGE, log)
    loop = box.directory("loop")
    (loop / "a.conf").write_text(f"%define here {loop}\n%include $here/b.conf\n")
    (loop / "b.conf").write_text("%include a.conf\n")
    configs.path("define include loop", loop / "a.conf")
    deep = "<demostorage>\n" * 40 + "</demostorage>\n" * 40
    configs.add("deep sections", section("zodb", deep, name="a"))
    configs.add("nul line", b"\0" * 1000 + b"\n")
    configs.add("long line", IN_MEMORY + "colour " + "b" * 100_000 + "\n")
    configs.add("bom", "\ufeff" + IN_MEMORY, CLEAN)
    many = "".join(section("zodb", "<mappingstorage/>", name=f"m{i}") for i in range(20))
    configs.add("many sections", many, CLEAN)


def _storage_paths(configs: Configs) -> None:
    """Storage paths that are no regular files; nothing may appear beside them."""
    box = configs.box
    for kind in ("fifo", "directory", "socket"):
        directory = box.directory(f"storage-{kind}")
        path = directory / "node"
        keep = None
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            path.mkdir()
        else:
            keep = socket.socket(socket.AF_UNIX)
            keep.bind(str(path))
        storage = section("filestorage", f"path {path}")
        plain = section("zodb", storage, name="fs")
        served = section("zodb", section("embeddedzeo", storage), name="zfs")
        check = _only(directory, {"node"})
        configs.add(f"filestorage on {kind}", plain, USAGE, QUICK_THREADS, check=check, keep=keep)
        configs.add(f"served filestorage on {kind}", served, USAGE, QUICK, check=check, keep=keep)
    parent_file = box.file("parent-file", "x")
    under_a_file = section("zodb", section("filestorage", f"path {parent_file}/x.fs"), name="fs")
    configs.add("filestorage under a file", under_a_file)
    configs.add("sqlite data-dir is a file", sqlite("s", parent_file), USAGE, QUICK)


def _unreachable_servers(configs: Configs) -> None:
    """Servers nobody runs: alone a usage error, beside a working database a failed cell."""
    dsn = "dsn host=127.0.0.1 port=1 dbname=x connect_timeout=2"
    mysql = "host 127.0.0.1\nport 1\nuser u\npasswd p\ndb d\nconnect_timeout 2"
    unreachable = {
        "postgresql": section("zodb", section("relstorage", section("postgresql", dsn)), name="pg"),
        "mysql": section("zodb", section("relstorage", section("mysql", mysql)), name="my"),
        "zeo": section("zodb", section("zeoclient", "server 127.0.0.1:1\nwait off"), name="z"),
    }
    for server, text in unreachable.items():
        configs.add(f"{server} unreachable", text, USAGE, QUICK)
        # Its own SQLite directory: cases run side by side.
        bystander = sqlite("local", configs.box.directory(f"bystander-{server}") / "local")
        configs.add(f"{server} unreachable beside sqlite", text + bystander, CELL_FAILED, QUICK)


def _only(directory: pathlib.Path, names: set[str]) -> Callable[[], str | None]:
    def check() -> str | None:
        found = {p.name for p in directory.iterdir()}
        return None if found == names else f"files appeared: {sorted(found - names)}"

    return check


def _commands(
    good: pathlib.Path, path: pathlib.Path, out: pathlib.Path
) -> list[tuple[str, list[str]]]:
    """Every subcommand that reads a result file, on *path*, writing into *out*."""
    return [
        ("show", ["show", str(path)]),
        ("show json", ["show", str(path), "--format", "json"]),
        ("show markdown", ["show", str(path), "--format", "markdown"]),
        ("compare", ["compare", str(good), str(path)]),
        ("history", ["history", str(good), str(path)]),
        ("export", ["export", str(path), "-o", str(out / "out.json")]),
        ("plot", ["plot", str(path), "-o", str(out / "chart.png")]),
        ("report", ["report", str(path), "-o", str(out / "site")]),
    ]


def result_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Hostile values anywhere in a real document, each file given to one subcommand."""
    base = hostile.base_document()
    paths = sorted(hostile.paths(base), key=repr)
    good = box.file("good.json", json.dumps(base))
    cases = []
    for index in range(int(250 * scale)):
        document = copy.deepcopy(base)
        changes = []
        for _ in range(rng.randint(1, 3)):
            path, value = rng.choice(paths), copy.deepcopy(_hostile_value(rng))
            try:
                hostile.set_path(document, path, value)
            except (KeyError, IndexError, TypeError):
                continue
            changes.append(f"{'.'.join(map(str, path))}={_short(value)}")
        saved = box.file(f"fuzz-{index}", json.dumps(document, ensure_ascii=True), "run.json")
        name, argv = rng.choice(_commands(good, saved, saved.parent))
        timeout = 120.0 if name in ("plot", "report") else 60.0
        cases.append(Case("result", f"{name} {'; '.join(changes)}"[:100], argv, CLEAN, timeout))
    return cases + _malformed_result_cases(box, base, good) + _run_directories(box, base)


def _run_directories(box: Sandbox, base: dict) -> list[Case]:
    """A directory of saved runs (--save-to) with one that is no run: skipped or refused."""
    cases = []
    bad_runs: dict[str, Callable[[pathlib.Path], object]] = {
        "fifo": os.mkfifo,
        "malformed": lambda path: path.write_text("{"),
        "huge": lambda path: os.truncate(_touch(path), (256 << 20) + 1),
        "directory": lambda path: path.mkdir(),
        "dangling symlink": lambda path: path.symlink_to(path.parent / "nowhere"),
    }
    for what, make in bad_runs.items():
        directory = box.directory(f"runs-{what}")
        for index in range(3):
            document = copy.deepcopy(base)
            document["metadata"]["started"] += index
            (directory / f"run{index}.json").write_text(json.dumps(document))
        bad = directory / "run9.json"
        make(bad)
        out = box.directory(f"runs-{what}-out")
        for name, argv in (
            ("history", ["history", str(directory)]),
            ("plot", ["plot", str(directory), "-o", str(out / "chart.png")]),
            ("report", ["report", str(directory), "-o", str(out / "site")]),
        ):
            skipped = "" if what in ("directory", "dangling symlink") else "skipped " + str(bad)
            case = Case("result", f"{name} of runs with {what}", argv, CLEAN, 120.0, warns=skipped)
            cases.append(case)
    return cases


def _touch(path: pathlib.Path) -> pathlib.Path:
    path.touch()
    return path


def _malformed_result_cases(box: Sandbox, base: dict, good: pathlib.Path) -> list[Case]:
    """Malformed files and paths: every subcommand refuses each in one line."""
    cases = []
    text = json.dumps(base)
    malformed: dict[str, str | bytes | pathlib.Path | None] = {
        "empty": "",
        "null": "null",
        "a list": "[]",
        "an object": "{}",
        "a string": '"x"',
        "truncated": text[: len(text) // 2],
        "deep nesting": "[" * 100_000 + "]" * 100_000,
        "NaN literal": text.replace('"started": 1700000000.5', '"started": NaN'),
        "1e999": text.replace('"started": 1700000000.5', '"started": 1e999'),
        "5000 digits": text.replace('"repetitions": 3', '"repetitions": ' + "9" * 5000),
        "utf-16": text.encode("utf-16"),
        "gzip": gzip.compress(text.encode()),
        "nul bytes": b"\0" * 4096,
        "version 999": text.replace('"version": ', '"version": 999, "x": ', 1),
        "no measurements": json.dumps({k: v for k, v in base.items() if k != "measurements"}),
        "fifo": box.fifo("result-fifo", "run.json"),
        "zero device": box.zero_device("result-zero", "run.json"),
        "directory": box.directory("result-dir"),
        "huge": box.sparse("result-huge", (256 << 20) + 1, "run.json"),
        "missing": box.root / "no-such-run.json",
    }
    for what, content in malformed.items():
        if content is None:
            continue
        if isinstance(content, pathlib.Path):
            path, out = content, box.directory(f"out-{what}")
        else:
            path = box.file(f"malformed-{what}", content, "run.json")
            out = path.parent
        for name, argv in _commands(good, path, out):
            if isinstance(content, pathlib.Path) and name in ("show json", "show markdown"):
                continue
            # A directory of runs is what history, plot and report read.
            runs = what == "directory" and name in ("history", "plot", "report")
            expect = CLEAN if runs else USAGE
            cases.append(Case("result", f"{name} on {what}", argv, expect, 120.0))
    return cases


def _hostile_value(rng: random.Random) -> object:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice(hostile.HOSTILE_VALUES)
    if kind == 1:
        return rng.choice([float("nan"), float("inf"), -float("inf"), 1e-320, -1e300, 0.5])
    if kind == 2:
        return rng.choice([0, -(2**70), 2**1000, 7, -3])
    if kind == 3:
        return _text(rng, string.printable + "\u00e9\u4e2d\U0001f600", 20)
    return {_text(rng, string.ascii_letters, 5): rng.randint(-3, 3)}


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "..."


def cachesim_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    from zodbshootout.cachesim.records import RECORD, marker_record

    def zeo_record(code: int, oid: int, dlen: int = 0) -> bytes:
        return RECORD.pack(1700000000, (dlen << 8) | code, 8, bytes(8), bytes(8)) + oid.to_bytes(
            8, "big"
        )

    good_zeo = marker_record(1700000000, kind="zeo", cache_size_bytes=1 << 20) + b"".join(
        zeo_record(0x20, i % 50) + zeo_record(0x52, i % 50, 100) for i in range(500)
    )
    spc = "".join(f"0,{i % 97},4096,r,{i * 0.001:.3f}\n" for i in range(500))
    good = box.file("good-trace", good_zeo, "db.trace")
    cases = [Case("cachesim", "a good ZEO trace", ["cachesim", str(good), "-q"], frozenset({0}))]
    traces: dict[str, bytes | str | pathlib.Path | None] = {
        "empty": b"",
        "random bytes": bytes(rng.randrange(256) for _ in range(4096)),
        "config text": IN_MEMORY,
        "spc bad opcode": spc + "0,1,2,x,3\n",
        "spc negative size": "0,1,-5,r,0.1\n",
        "spc huge numbers": f"0,{10**40},{10**40},r,1e400\n",
        "spc nan time": "0,1,4096,r,nan\n",
        "spc missing fields": "0,1\n",
        "spc long line": "0,1,2,r,3\n" + "1," * (1 << 20),
        "gzip bomb": _gzip_bomb(),
        "truncated gzip": gzip.compress(spc.encode())[:40],
        "not gzip": b"plain text, .gz name",
        "bz2 junk": bz2.compress(bytes(rng.randrange(256) for _ in range(2000))),
        "zeo damaged": marker_record(1700000000, kind="zeo") + bytes(range(256)) * 4,
        "zeo truncated": good_zeo[: len(good_zeo) // 2 + 7],
        "zeo huge dlen": marker_record(1700000000, kind="zeo")
        + zeo_record(0x52, 1, (1 << 23) - 1) * 10,
        # Issue 35: every field range-checked, the line or record named.
        "spc size 10^30": f"0,1,4096,r,0.0\n0,1,{10**30},r,0.1\n",
        "spc lba -10^30": f"0,1,4096,r,0.0\n0,{-(10**30)},4096,r,0.1\n",
        "spc lba 2^63": f"0,1,4096,r,0.0\n0,{2**63},4096,w,0.1\n",
        "spc size 2^31+1": f"0,1,4096,r,0.0\n0,1,{2**31 + 1},r,0.1\n",
        "spc asu -1": "0,1,4096,r,0.0\n-1,1,4096,r,0.1\n",
        "spc time inf": "0,1,4096,r,0.0\n0,1,4096,r,inf\n",
        "spc time -1": "0,1,4096,r,0.0\n0,1,4096,w,-1\n",
        "spc six fields": "0,1,4096,r,0.0\n0,1,4096,r,0.1,9\n",
        "spc four fields": "0,1,4096,r,0.0\n0,1,4096,r\n",
        "spc 4300 digits": "0,1,4096,r,0.0\n0," + "9" * 4000 + ",1,r,0\n",
        "zeo oid 2^64-1": marker_record(1700000000, kind="zeo")
        + zeo_record(0x22, 5, 10)
        + zeo_record(0x22, 2**64 - 1, 10),
        "zeo tid 2^63": marker_record(1700000000, kind="zeo")
        + RECORD.pack(1700000000, (10 << 8) | 0x22, 8, (2**63).to_bytes(8, "big"), bytes(8))
        + bytes(8),
        "zeo unknown code": marker_record(1700000000, kind="zeo") + zeo_record(0x30, 5),
        "zeo negative dlen": marker_record(1700000000, kind="zeo")
        + RECORD.pack(1700000000, -(1 << 31) | 0x52, 8, bytes(8), bytes(8))
        + bytes(8),
        "zeo oid of 5 bytes": marker_record(1700000000, kind="zeo")
        + RECORD.pack(1700000000, 0x22, 5, bytes(8), bytes(8))
        + bytes(5),
        "zeo marker kind escape": marker_record(1700000000, kind="zeo\x1b]0;x\x07")
        + zeo_record(0x22, 5, 10),
        "zeo marker size 10^400": marker_record(1700000000, kind="zeo", cache_size_bytes=10**400)
        + zeo_record(0x22, 5, 10),
        "zeo marker size -1": marker_record(1700000000, kind="zeo", cache_size_bytes=-1)
        + zeo_record(0x22, 5, 10),
        "zeo marker phase escape": marker_record(1700000000, kind="zeo")
        + marker_record(1700000000, phase="\x1b[2Jhot")
        + zeo_record(0x22, 5, 10),
        "gzip bomb of valid lines": _bomb_of_valid_lines(gzip.compress),
        "bz2 bomb of valid lines": _bomb_of_valid_lines(bz2.compress),
        "fifo": box.fifo("trace-fifo", "x.trace"),
        "zero device": box.zero_device("trace-zero", "x.trace"),
        "huge sparse": box.sparse("trace-huge", 1 << 33, "x.trace"),
    }
    names = {
        "gzip bomb of valid lines": "valid.spc.gz",
        "bz2 bomb of valid lines": "valid.spc.bz2",
        "gzip bomb": "bomb.spc.gz",
        "truncated gzip": "t.spc.gz",
        "not gzip": "x.spc.gz",
        "bz2 junk": "j.spc.bz2",
    }
    for what, content in traces.items():
        if content is None:
            continue
        path = (
            content
            if isinstance(content, pathlib.Path)
            else box.file(f"trace-{what}", content, names.get(what, "x.trace"))
        )
        expect = CLEAN if what in PARSEABLE_TRACES else USAGE
        cases.append(Case("cachesim", what, ["cachesim", str(path), "-q"], expect, 60.0))
        # The same file in a directory of traces, beside a good one.
        if isinstance(content, pathlib.Path):
            continue
        directory = box.directory(f"tracedir-{what}")
        shutil.copy(good, directory / "good.trace")
        shutil.copy(path, directory / "bad.trace")
        # Skipped with a warning naming it, the good one replayed; or refused.
        argv = ["cachesim", str(directory)]
        skipped = "" if expect == CLEAN else "skipped " + str(directory / "bad.trace")
        case = Case("cachesim", f"directory with {what}", argv, CLEAN, 60.0, warns=skipped)
        cases.append(case)
    fifo_dir = box.directory("tracedir-fifo")
    shutil.copy(good, fifo_dir / "good.trace")
    os.mkfifo(fifo_dir / "pipe.trace")
    skipped = "skipped " + str(fifo_dir / "pipe.trace")
    argv = ["cachesim", str(fifo_dir)]
    cases.append(Case("cachesim", "directory with a FIFO", argv, CLEAN, warns=skipped))
    empty_dir = box.directory("tracedir-empty")
    cases.append(Case("cachesim", "empty directory", ["cachesim", str(empty_dir)], USAGE))
    loop_dir = box.directory("tracedir-loop")
    (loop_dir / "a.trace").symlink_to(loop_dir / "b.trace")
    (loop_dir / "b.trace").symlink_to(loop_dir / "a.trace")
    cases.append(Case("cachesim", "symlink loop", ["cachesim", str(loop_dir)], USAGE))
    cases.append(Case("cachesim", "missing", ["cachesim", str(box.root / "none.trace")], USAGE))
    for sizes in (
        "1KB",
        "0",
        "-1",
        "1EB",
        "nan",
        "1,,2",
        "x" * 5000,
        "9" * 400,
    ):
        cases.append(
            Case(
                "cachesim",
                f"--sizes {sizes[:20]}",
                ["cachesim", str(good), "--sizes", sizes],
                USAGE,
            )
        )
    plain = box.file("trace-plain-big", spc * 40, "big.spc")  # about 500 KB
    for limit, expect in (("64KB", USAGE), ("1MB", frozenset({0})), ("2GB", frozenset({0}))):
        argv = ["cachesim", str(plain), "-q", "--policy", "lru", "--max-trace-size", limit]
        cases.append(Case("cachesim", f"plain trace, --max-trace-size {limit}", argv, expect))
    for limit in ("0", "1", "-1", "nan", "inf", "1e9GB", "65GB", "", "9" * 400, "1KB,2KB"):
        argv = ["cachesim", str(good), "--max-trace-size", limit]
        cases.append(Case("cachesim", f"--max-trace-size {limit[:20]!r}", argv, USAGE))
    for policy in ("", "arc", ",", "x" * 3000):
        cases.append(
            Case(
                "cachesim",
                f"--policy {policy[:20]}",
                ["cachesim", str(good), "--policy", policy],
                USAGE,
            )
        )
    plot_fifo = box.fifo("plot-fifo", "chart.png")
    for target in (plot_fifo, box.directory("plot-dir"), box.directory("plot-ext") / "chart.txt"):
        cases.append(
            Case(
                "cachesim",
                f"--plot {target.name}",
                ["cachesim", str(good), "--plot", str(target)],
                USAGE,
                120.0,
            )
        )
    return cases


#: Odd but readable traces: replayed or refused, either is fine.  (An SPC line
#: with huge numbers or a NaN time is refused since issue 35.)
PARSEABLE_TRACES = ("zeo truncated", "zeo huge dlen")


def _bomb_of_valid_lines(compress: Callable[[bytes], bytes]) -> bytes:
    """Good SPC lines that decompress past the default bound (128 MiB): 144 MiB of them.

    Compressed members one after the other are one stream, to gzip and bzip2.
    """
    line = b"0,20941264,8192,r,0.551706\n"
    member = compress(line * ((1 << 20) // len(line)))
    return member * 144


def _gzip_bomb() -> bytes:
    buffer = gzip.compress(bytes(64 << 20), compresslevel=9)
    return buffer


def rawkv_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    cases = []
    for index, store in enumerate(hostile.FOREIGN_STORES):
        if store.needs:
            try:
                __import__(store.needs)
            except ImportError:
                continue
        directory = box.directory(f"rawkv-{index}")
        path = directory / "theirs"
        store.make(path)
        before = hostile.checksum(path)
        config = directory / "floor.conf"
        config.write_text(f"<rawkv floor>\n  backend {store.backend}\n  path {path}\n</rawkv>\n")
        # Beside a working database: the floor is refused, the database measured.
        both = directory / "both.conf"
        both.write_text(IN_MEMORY + config.read_text())

        def check(
            path: pathlib.Path = path, before: str = before, directory: pathlib.Path = directory
        ) -> str | None:
            if hostile.checksum(path) != before:
                return "the user's store changed"
            return _only(directory, {"theirs", "floor.conf", "both.conf"})()

        name = f"{store.backend} {store.make.__name__}"
        argv = [str(config), "-n", "10", "-c", "1", "-r", "1", "-q"]
        cases.append(Case("rawkv", name, argv, USAGE, check=check))
        beside = [str(both), *QUICK_THREADS]
        cases.append(Case("rawkv", name + " beside mem", beside, USAGE | CELL_FAILED, check=check))

    def floor(backend: str, path: object = None) -> str:
        return section("rawkv", f"backend {backend}" + (f"\npath {path}" if path else ""), name="f")

    dangling = box.directory("rawkv-dangling") / "link"
    dangling.symlink_to(dangling.parent / "nowhere")
    for what, text in {
        "bad backend": floor("redis"),
        "path under a file": floor("sqlite", f"{box.file('rawkv-parent', 'x')}/kv.db"),
        "path is a fifo": floor("sqlite", box.fifo("rawkv-fifo")),
        "lmdb path is a fifo": floor("lmdb", box.fifo("rawkv-lmdb-fifo")),
        "leveldb dangling symlink": floor("leveldb", dangling),
    }.items():
        config = box.file(f"rawkv {what}", text, "floor.conf")
        argv = [str(config), "-n", "10", "-c", "1", "-r", "1", "-q"]
        cases.append(Case("rawkv", what, argv, USAGE))
    return cases


def target_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    config = str(box.file("mem-targets.conf", IN_MEMORY))
    cases = []
    for option in ("-o", "--pyperf", "--save-to", "-p", "--cache-trace"):
        for kind in ("fifo", "socket", "dangling symlink", "under a file"):
            directory = box.directory(f"target {option} {kind}")
            keep = None
            if kind == "fifo":
                target = directory / "t"
                os.mkfifo(target)
            elif kind == "socket":
                keep = socket.socket(socket.AF_UNIX)
                target = directory / "t"
                keep.bind(str(target))
            elif kind == "dangling symlink":
                target = directory / "t"
                target.symlink_to(directory / "nowhere")
            else:
                (directory / "file").write_text("x")
                target = directory / "file" / "t"
            argv = [
                config,
                *(QUICK if option == "--cache-trace" else QUICK_THREADS),
                option,
                str(target),
            ]
            names = {p.name for p in directory.iterdir()}
            cases.append(
                Case(
                    "target",
                    f"{option} {kind}",
                    argv,
                    USAGE,
                    check=_only(directory, names),
                    keep=keep,
                )
            )
    return cases


def fault_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    cases = []
    phases = ["add", "update", "warm", "cold", "hot", "steamin"]
    actions = ["kill", "exit", "raise", "oom"]
    picks = [(p, a) for p in phases for a in actions]
    rng.shuffle(picks)
    for phase, action in [*picks[: max(4, int(12 * scale))], ("cold", "hang")]:
        cases.append(_fault_case(box, f"{phase}:1:{action}", f"{phase} {action}"))
    for repetition in (1, 2):
        cases.append(
            _fault_case(box, f"populate:{repetition}:raise", f"populate {repetition} raise")
        )
    return cases


def _fault_case(box: Sandbox, fault: str, name: str) -> Case:
    directory = box.directory(f"fault {name}")
    config = directory / "two.conf"
    config.write_text(
        sqlite("victim", directory / "victim") + sqlite("bystander", directory / "bystander")
    )
    saved = directory / "run.json"
    argv = [str(config), "-n", "20", "-c", "2", "-r", "2", "--timeout", "10", "-o", str(saved)]

    def check() -> str | None:
        try:
            failures = json.loads(saved.read_text())["failures"]
        except (OSError, ValueError, KeyError):
            return "no result file"
        return None if failures else '"failures": [] in the result file'

    # -o FILE puts the table on stdout still; the footnote is checked there.
    return Case(
        "fault", name, argv, CELL_FAILED, 120.0, {"ZODBSHOOTOUT_FAULT": f"victim:{fault}"}, check
    )


#: Characters a generated password holds beside its letters ("$" is ZConfig's).
_ODD = " '\"\\=;:@/%&*()[]{}#,\u00e9\u00df"


def secret_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Generated passwords in every place a configuration holds one, none ever printed.

    The database is unreachable (or its user unknown), a SQLite database
    beside it is measured, and stdout, stderr and the -o file are searched
    for every run of five or more letters of the password.
    """
    cases = []
    for index in range(int(30 * scale)):
        letters = "".join(rng.choice(string.ascii_letters) for _ in range(8))
        password = "".join(
            rng.choice(_ODD) + part if part_index else part
            for part_index, part in enumerate([letters[:5] + "Pw", letters[5:] + "Zq9x"])
        )
        place = rng.choice(["dsn quoted", "dsn unquoted", "dsn url", "mysql passwd", "define"])
        directory = box.directory(f"secret {index}")
        text = _secret_config(place, password) + sqlite("local", directory / "local")
        config = directory / "secret.conf"
        config.write_text(text, encoding="utf-8")
        saved = directory / "run.json"
        argv = [str(config), *QUICK, "-o", str(saved), "--debug"]
        tokens = [t for t in re.findall(r"[A-Za-z0-9]{5,}", password)]
        cases.append(
            Case(
                "secret",
                f"{place} {password!r}",
                argv,
                CELL_FAILED | USAGE,
                secrets=tokens,
                check=_absent(tokens, saved),
            )
        )
    return cases


def _secret_config(place: str, password: str) -> str:
    if place == "mysql passwd":
        body = f"host 127.0.0.1\nport 3306\nuser zs_nobody_here\npasswd {password}\ndb zs_none"
        return section("zodb", section("relstorage", section("mysql", body)), name="db")
    if place == "dsn url":
        import urllib.parse

        dsn = f"dsn postgresql://zs:{urllib.parse.quote(password, safe='')}@127.0.0.1:1/x"
    elif place == "dsn quoted":
        quoted = password.replace("\\", "\\\\").replace("'", "\\'")
        dsn = f"dsn host=127.0.0.1 port=1 dbname=x password='{quoted}' connect_timeout=2"
    elif place == "dsn unquoted":  # wrong if it has a space: masked up to the next key
        dsn = f"dsn host=127.0.0.1 port=1 dbname=x password={password} connect_timeout=2"
    else:
        defined = f"%define secret {password}\n"
        dsn = "dsn host=127.0.0.1 port=1 dbname=x password='$secret' connect_timeout=2"
        return defined + section(
            "zodb", section("relstorage", section("postgresql", dsn)), name="db"
        )
    return section("zodb", section("relstorage", section("postgresql", dsn)), name="db")


def _absent(tokens: list[str], saved: pathlib.Path) -> Callable[[], str | None]:
    def check() -> str | None:
        text = saved.read_text(encoding="utf-8", errors="replace") if saved.exists() else ""
        found = [t for t in tokens if t in text]
        return f"the password in {saved.name}: {found}" if found else None

    return check


# --- round 4: report directories, held outputs, terminal injection (issue 35) ----------


def _saved_runs(box: Sandbox) -> tuple[pathlib.Path, pathlib.Path]:
    """Two good classic result files (a base and a changed run)."""
    base = hostile.base_document()
    changed = copy.deepcopy(base)
    changed["metadata"]["started"] += 60
    return box.file("good.json", json.dumps(base)), box.file("changed.json", json.dumps(changed))


def _intact(path: pathlib.Path) -> Callable[[], str | None]:
    """A check that everything at *path* is as it was when the case was made."""
    before = hostile.checksum(path)

    def check() -> str | None:
        return None if hostile.checksum(path) == before else f"{path.name} changed"

    return check


def report_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Report directories that are someone else's: refused and left byte for byte."""
    good, _changed = _saved_runs(box)
    outside = box.file("outside.svg", "<svg>the user's</svg>")
    foreign: dict[str, dict[str, str | bytes | pathlib.Path | None]] = {
        "web root": {"index.html": "<html>mine</html>"},
        "web root with charts": {
            "index.html": "<html>mine</html>",
            "run.svg": "<svg/>",
            "history.svg": "<svg/>",
            "comparison.svg": "<svg/>",
        },
        "sphinx build": {"index.html": "x", "searchindex.js": "x", "_static": None},
        "marker is a symlink": {".zodbshootout-report": outside, "index.html": "x"},
        "marker is a directory": {".zodbshootout-report": None, "index.html": "x"},
        "marker is a fifo": {".zodbshootout-report": b"fifo", "index.html": "x"},
        "only a hidden file": {".git": None},
        "a dangling symlink": {"index.html": box.root / "nowhere"},
    }
    cases = []
    for what, entries in foreign.items():
        site = box.directory(f"report {what}") / "site"
        site.mkdir()
        for name, content in entries.items():
            if content is None:
                (site / name).mkdir()
            elif content == b"fifo":
                os.mkfifo(site / name)
            elif isinstance(content, pathlib.Path):
                (site / name).symlink_to(content)
            else:
                (site / name).write_text(content) if isinstance(content, str) else None
        argv = ["report", str(good), "-o", str(site)]
        cases.append(Case("report", what, argv, USAGE, 120.0, check=_intact(site.parent)))
    # An earlier report of the tool's, with a file of the user's beside it: replaced, kept.
    site = box.directory("report earlier") / "site"
    earlier = ["report", str(good), "-o", str(site)]
    subprocess.run([sys.executable, "-m", "zodbshootout", *earlier, "-q"], check=True)
    notes = site / "notes.txt"
    notes.write_text("the user's own file\n")
    cases.append(Case("report", "earlier report", earlier, frozenset({0}), 120.0,
                      check=_intact(notes)))  # fmt: skip
    # A chart name of an earlier report that is now a link to the user's file: refused.
    linked = box.directory("report linked chart") / "site"
    subprocess.run([sys.executable, "-m", "zodbshootout", *earlier[:3], str(linked), "-q"],
                   check=True)  # fmt: skip
    (linked / "run.svg").unlink()
    (linked / "run.svg").symlink_to(outside)
    argv = ["report", str(good), "-o", str(linked)]
    cases.append(Case("report", "chart is a link out", argv, USAGE, 120.0,
                      check=_intact(outside)))  # fmt: skip
    return cases


#: A process that claims its argv[1] as a running command does, says so, and
#: holds it until its stdin closes.
_HOLDER = (
    "import sys\n"
    "from zodbshootout.outputfile import claim_output, output_claims\n"
    "with output_claims():\n"
    "    claim_output(sys.argv[1])\n"
    "    print('held', flush=True)\n"
    "    sys.stdin.read()\n"
)


class Holder:
    """Another command holding an output while a case runs (its ``keep``)."""

    def __init__(self, path: pathlib.Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline() != "held\n":
            raise RuntimeError(f"the holder of {path} did not start")

    def close(self) -> None:
        self.process.communicate("")


def lock_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Outputs another command holds, or whose lock name is someone else's file: refused,
    the output left as it was; a lock a killed command left: no obstacle."""
    good, changed = _saved_runs(box)
    config = str(box.file("mem-locks.conf", IN_MEMORY))
    quick = ["-n", "5", "-c", "1", "-r", "1", "-q", "--threads"]
    trace = str(_trace(box))
    # Each writer: its argv writing into a directory, and the output it names there.
    writers: dict[str, Callable[[pathlib.Path], tuple[list[str], pathlib.Path]]] = {
        "run -o": lambda d: ([config, *quick, "-o", str(d / "o.json")], d / "o.json"),
        "run --pyperf": lambda d: ([config, *quick, "--pyperf", str(d / "p.json")], d / "p.json"),
        "run --save-to": lambda d: ([config, *quick, "-o", str(d / "o.json"), "--save-to",
                                     str(d / "runs")], d / "o.json"),
        "mix -o": lambda d: (["mix", config, "--threads", "-n", "10", "-d", "0.3", "--warmup",
                              "0", "-q", "-o", str(d / "m.json")], d / "m.json"),
        "export": lambda d: (["export", str(good), "-o", str(d / "e.json")], d / "e.json"),
        "plot": lambda d: (["plot", str(good), "-o", str(d / "c.png")], d / "c.png"),
        "plot two": lambda d: (["plot", str(good), str(changed), "-o", str(d / "c.svg")],
                               d / "c.svg"),
        "cachesim --plot": lambda d: (["cachesim", trace, "--plot", str(d / "s.png")],
                                      d / "s.png"),
        "report": lambda d: (["report", str(good), "-o", str(d / "site")], d / "site"),
    }  # fmt: skip
    cases = []
    for what, make in writers.items():
        directory = box.directory(f"held {what}")
        argv, target = make(directory)
        if what != "report":
            target.write_bytes(b"an earlier file\n")
        holder = Holder(target)  # before the checksum: its lock file is there throughout
        cases.append(Case("lock", f"{what} held", argv, USAGE, 120.0,
                          check=_intact(directory), keep=holder))  # fmt: skip
        for squatter, make_lock in _squatters(box).items():
            directory = box.directory(f"squat {what} {squatter}")
            argv, target = make(directory)
            make_lock(directory / f".{target.name}.lock")
            cases.append(Case("lock", f"{what} lock is {squatter}", argv, USAGE, 120.0,
                              check=_intact(directory)))  # fmt: skip
    # A lock file a killed command left behind blocks nothing, and is removed.
    directory = box.directory("stale lock")
    (directory / ".out.json.lock").write_text("999999999\n")
    argv = ["export", str(good), "-o", str(directory / "out.json")]
    cases.append(Case("lock", "stale lock", argv, frozenset({0}),
                      check=_only(directory, {"out.json"})))  # fmt: skip
    return cases


def _squatters(box: Sandbox) -> dict[str, Callable[[pathlib.Path], object]]:
    """Someone else's file where an output's lock would be."""
    precious = box.file("precious.txt", "precious\n")
    return {
        "a file of other content": lambda lock: lock.write_text("my notes\n"),
        "a hard link": lambda lock: os.link(precious, lock),
        "a symlink": lambda lock: lock.symlink_to(precious),
        "a fifo": os.mkfifo,
        "a directory": lambda lock: lock.mkdir(),
    }


def _trace(box: Sandbox) -> pathlib.Path:
    """A small SPC trace (ASU, LBA, size, opcode, timestamp)."""
    lines = [f"0,{block},4096,r,{block / 1000:.3f}" for block in range(200)]
    return box.file("small.spc", "\n".join(lines * 3) + "\n")


#: The start of a line a hostile string would forge.
_FORGED = "FORGED:"

#: Escape sequences and controls a hostile file puts in its strings.
_ESCAPES = [
    "\x1b]52;c;SGVsbG8=\x07",  # OSC 52: write the clipboard
    "\x1b]0;pwned\x07",  # a window title
    "\x1b]8;;http://example.invalid\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x1b[8m",  # conceal
    "\x1bP+q544e\x1b\\",  # DCS: ask the terminal about itself
    "\x07",
    "\x00",
    "\r" + _FORGED + " overwritten",
    "\n" + _FORGED + " a line of its own",
    "\r\n" + _FORGED + " after CRLF",
    "\u2028" + _FORGED + " after a line separator",
    "\u202e" + "desrever",
    "\x9b31m",  # C1 CSI
    "\x85" + _FORGED + " after NEL",
    "\x08\x08\x08\x7f",
    "[bold red]markup[/] [/nope]",  # rich's markup, which must not be read
]


def _hostile_text(rng: random.Random) -> str:
    return "".join(rng.choice(_ESCAPES) for _ in range(rng.randint(1, 3)))


def _poison(document: dict, rng: random.Random, renames: dict[str, str]) -> dict:
    """*document* with its databases renamed (*renames*: the same in the runs compared),
    and hostile text in its label, notes and metadata values."""
    text = json.dumps(document)
    for name, hostile_name in renames.items():
        text = text.replace(json.dumps(name), json.dumps(hostile_name))
    poisoned = json.loads(text)
    metadata = poisoned.setdefault("metadata", {})
    metadata["label"] = "label" + _hostile_text(rng)
    environment = metadata.setdefault("environment", {})
    for key in ("hostname", "cpu_model", "platform"):
        environment[key] = key + _hostile_text(rng)
    metadata["config"] = {"path": "c.conf" + _hostile_text(rng),
                          "text": "<zodb x>" + _hostile_text(rng)}  # fmt: skip
    poisoned["notes"] = [*poisoned.get("notes", []), "note" + _hostile_text(rng)]
    for failure in poisoned.get("failures", []):
        failure["reason"] = str(failure.get("reason", "")) + _hostile_text(rng)
    return poisoned


def terminal_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Escape sequences in classic, mix and versions files, through every subcommand and
    format that prints them: shown, never obeyed (judged for every case)."""
    from zodbshootout.render.formats import FORMATS

    root = ROOT / "tests" / "unit" / "golden" / "mix"
    classic = hostile.base_document()
    mix = {name: json.loads((root / f"{name}.json").read_text()) for name in ("base", "changed")}
    cases = []
    for index in range(max(1, int(6 * scale))):
        classic_names = {n: n + _hostile_text(rng) for n in classic["databases"]}
        mix_names = {n: n + _hostile_text(rng) for n in mix["base"]["databases"]}
        directory = box.directory(f"terminal {index}")
        paths = {}
        for name in ("base", "changed"):
            document = _poison(classic, rng, classic_names)
            document["metadata"]["started"] += 60 * (name == "changed")
            paths[f"classic-{name}"] = directory / f"classic-{name}.json"
            paths[f"classic-{name}"].write_text(json.dumps(document))
            paths[f"mix-{name}"] = directory / f"mix-{name}.json"
            paths[f"mix-{name}"].write_text(json.dumps(_poison(mix[name], rng, mix_names)))
        paths["versions"] = directory / "versions.json"
        paths["versions"].write_text(_hostile_versions(paths, rng))
        c0, c1 = str(paths["classic-base"]), str(paths["classic-changed"])
        m0, m1 = str(paths["mix-base"]), str(paths["mix-changed"])
        formatted = {
            "show": ["show", c0], "show mix": ["show", m0],
            "compare": ["compare", c0, c1], "compare mix": ["compare", m0, m1],
            "history": ["history", c0, c1], "history mix": ["history", m0, m1],
            "compare versions": ["compare", str(paths["versions"])],
        }  # fmt: skip
        for what, argv in formatted.items():
            for name in FORMATS:
                cases.append(Case("terminal", f"{index} {what} {name}",
                                  [*argv, "--format", name], CLEAN, 60.0))  # fmt: skip
        plain = {
            "show --metadata": ["show", c0, "--metadata"],
            "show --metadata mix": ["show", m0, "--metadata"],
            "plot two": ["plot", c0, c1, "-o", str(directory / "two.png")],
            "plot mix": ["plot", m0, "-o", str(directory / "mix.svg")],
            "report": ["report", c0, c1, "-o", str(directory / "site")],
            "compare gate": ["compare", c0, c1, "--fail-if-slower", "1"],
            "export": ["export", c0, "-o", str(directory / "pyperf.json")],
        }
        gate = frozenset({0, 1, 2, 3})
        for what, argv in plain.items():
            expect = gate if what == "compare gate" else CLEAN
            cases.append(Case("terminal", f"{index} {what}", argv, expect, 120.0))
    return cases


def _hostile_versions(paths: dict[str, pathlib.Path], rng: random.Random) -> str:
    """A versions file of two variants (the poisoned classic runs), hostile names."""
    from zodbshootout.results import file as resultfile
    from zodbshootout.results import versions

    variants = [
        versions.VariantRecord(
            name + _hostile_text(rng),
            ["ZEO==6.1" + _hostile_text(rng)],
            {"requested": "", "executable": "/usr/bin/python3" + _hostile_text(rng),
             "version": "3.11.7", "implementation": "CPython"},
            "uv" + _hostile_text(rng),
            {"key": "k", "path": "/cache/x", "built": True, "build_seconds": 1.0},
            {"ZEO" + _hostile_text(rng): "6.1"},
            resultfile.load(str(paths[f"classic-{which}"])),
        )
        for name, which in (("old", "base"), ("new", "changed"))
    ]  # fmt: skip
    rounds = [
        versions.RoundRecord(1, index + 1, variant.name, 10.0 + index, 11.0 + index, 0)
        for index, variant in enumerate(variants)
    ]
    result = versions.VersionsResult(
        ["etc/local.conf"], "alternate", None, 1, variants, rounds, 10.0, 12.0
    )
    return json.dumps(versions.to_document(result))


# --- round 4: servers that die mid-run (issue 35, classes 5 and 6) -------------------


class Doomed:
    """A private server a death case starts, and kills by PID once stderr says *trigger*.

    Never the machine's shared PostgreSQL or MariaDB: every case has a server
    of its own (runzeo, or the tests' private cluster helpers), started just
    before its command, in the database named ``victim`` of its configuration
    (*bystander*: the databases after it), and removed after it.
    """

    PASSWORD = "Doomed-Pw-4Kz"

    def __init__(self, kind: str, config: pathlib.Path, bystander: str, trigger: str) -> None:
        self.kind = kind
        self.config = config
        self.bystander = bystander
        self.trigger = trigger
        self.killed_at: float | None = None
        self.ended: float | None = None
        self._server: object = None
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        from support import local, privatemariadb, privatepg

        if self.kind == "zeo":
            port = local.free_port()
            path = self.config.parent / "server.fs"
            self._process = subprocess.Popen(
                [sys.executable, "-m", "ZEO.runzeo", "-a", f"127.0.0.1:{port}", "-f", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            local.wait_for_port(port, process=self._process)
            client = f"server 127.0.0.1:{port}\nwait-timeout 3"
            victim = section("zodb", section("clientstorage", client), name="victim")
        elif self.kind == "postgresql":
            cluster = privatepg.PrivateCluster("zs_doomed", self.PASSWORD)
            self._server = cluster
            cluster.start()
            body = section("postgresql", f"dsn {cluster.dsn()}")
            victim = section("zodb", section("relstorage", body), name="victim")
        else:
            server = privatemariadb.PrivateMariaDB("zs_doomed", self.PASSWORD)
            self._server = server
            server.start()
            body = section("mysql", server.mysql_section())
            victim = section("zodb", section("relstorage", body), name="victim")
        self.config.write_text("%import relstorage\n%import ZEO\n" + victim + self.bystander)

    #: The database whose progress line says the trigger.
    database = "victim"

    def kill(self, _command: subprocess.Popen) -> None:
        """Down at once: SIGKILL (ZEO, MariaDB), PostgreSQL's immediate shutdown."""
        self.killed_at = time.monotonic()
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        else:
            self._server.crash()  # type: ignore[attr-defined]

    def stop(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
        elif self._server is not None:
            self._server.stop()  # type: ignore[attr-defined]


def _death_kinds() -> list[str]:
    """The servers this machine can start privately (a note on stderr for the others)."""
    try:
        from support import privatemariadb, privatepg
    except ImportError as e:  # support.local needs pytest
        print(f"death: no private servers ({e}); only ZEO's cases", file=sys.stderr)
        return []
    kinds = ["zeo"]
    for kind, why in (("postgresql", privatepg.unavailable()),
                      ("mariadb", privatemariadb.unavailable())):  # fmt: skip
        if kind == "postgresql" and not why:
            try:
                import psycopg2  # noqa: F401
            except ImportError:
                why = "psycopg2 is not installed"
        if why:
            print(f"death: no {kind} cases: {why}", file=sys.stderr)
        else:
            kinds.append(kind)
    return kinds


def death_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """Servers killed mid-run, classic and mix: at populate, while measuring, at the read-back.

    Each case: exit 1; the classic run's footnote, or mix's one ``victim:
    failed:`` line; what was measured before the kill, and the database
    after it, kept in the result file; the run over within seconds of the
    kill; no process of the command's left (the judge checks every case's
    session).
    """
    try:
        kinds = ["zeo", *[k for k in _death_kinds() if k != "zeo"]]
    except Exception as e:  # pragma: no cover - a machine without the helpers
        print(f"death: skipped: {e}", file=sys.stderr)
        return []
    cases = []
    for kind in kinds:
        for point, trigger, fault in (
            ("populate", "repetition 2/3: populate", "victim:populate:2:pause"),
            ("write", "repetition 2/3: write", None),
            ("read", "repetition 2/3: read", None),
        ):
            cases.append(_classic_death(box, kind, point, trigger, fault))
        for point, trigger, fault in (
            ("dataset load", "loading the dataset", "victim:populate:0:pause"),
            ("measuring", "1 s:", None),
            ("measuring with --threads", "1 s:", None),
            ("read-back", "reading every object's version back", "victim:readback:0:pause"),
        ):
            cases.append(_mix_death(box, kind, point, trigger, fault))
    cases += _mix_unreachable(box)
    return cases


def _mix_unreachable(box: Sandbox) -> list[Case]:
    """mix and servers nobody runs: alone one error line (2), beside SQLite a note (1)."""
    from support import local

    port = local.free_port()  # closed again at once: nothing listens there
    dsn = f"dsn host=127.0.0.1 port={port} dbname=x connect_timeout=2"
    mysql = f"host 127.0.0.1\nport {port}\nuser u\npasswd p\ndb d\nconnect_timeout 2"
    victims = {
        "postgresql": section("relstorage", section("postgresql", dsn)),
        "mariadb": section("relstorage", section("mysql", mysql)),
        "zeo": section("zeoclient", f"server 127.0.0.1:{port}\nwait off"),
    }
    cases = []
    for kind, storage in victims.items():
        victim = "%import relstorage\n" + section("zodb", storage, name="victim")
        directory = box.directory(f"unreachable mix {kind}")
        alone = directory / "alone.conf"
        alone.write_text(victim)
        beside = directory / "beside.conf"
        beside.write_text(victim + sqlite("local", directory / "local"))
        quick = ["-n", "50", "-c", "1", "-d", "0.5", "--warmup", "0"]
        cases.append(Case("death", f"mix {kind} unreachable", ["mix", str(alone), *quick], USAGE))
        cases.append(Case("death", f"mix {kind} unreachable beside sqlite",
                          ["mix", str(beside), *quick], CELL_FAILED,
                          failed_line="victim: not measured: ",
                          own_lines=("zodbshootout mix: ",)))  # fmt: skip
    return cases


def _classic_death(box: Sandbox, kind: str, point: str, trigger: str, fault: str | None) -> Case:
    directory = box.directory(f"death {kind} {point}")
    config, saved = directory / "doomed.conf", directory / "run.json"
    server = Doomed(kind, config, sqlite("local", directory / "local"), trigger)
    argv = [str(config), "-n", "20", "-c", "2", "-r", "3", "--timeout", "60", "-o", str(saved)]

    def check() -> str | None:
        document = _saved(saved)
        if isinstance(document, str):
            return document
        failed = {failure["database"] for failure in document["failures"]}
        kept = {m["database"] for m in document["measurements"]}
        if failed != {"victim"}:
            return f"failures of {sorted(failed)}, not only the victim's"
        if "local" not in kept:
            return "the bystander's measurements are missing"
        return _after_kill(server, 60.0)

    env = {"ZODBSHOOTOUT_FAULT": fault} if fault else {}
    return Case("death", f"run {kind} killed at {point}", argv, CELL_FAILED, 180.0, env,
                check, server=server, secrets=[Doomed.PASSWORD],
                own_lines=("zodbshootout", "victim: ", "local: ", "  "))  # fmt: skip


def _mix_death(box: Sandbox, kind: str, point: str, trigger: str, fault: str | None) -> Case:
    directory = box.directory(f"death mix {kind} {point}")
    config, saved = directory / "doomed.conf", directory / "mix.json"
    measuring = point.startswith("measuring")
    # Measuring: 20 s that the kill cuts short, alone; else a bystander measured after it.
    bystander = "" if measuring else sqlite("local", directory / "local")
    server = Doomed(kind, config, bystander, trigger)
    duration = ["-d", "20", "--interval", "1"] if measuring else ["-d", "1"]
    duration += ["--threads"] if "threads" in point else []
    argv = ["mix", str(config), "-n", "200", "-c", "2", *duration, "--warmup", "0",
            "--timeout", "60", "-o", str(saved)]  # fmt: skip

    def check() -> str | None:
        document = _saved(saved)
        if isinstance(document, str):
            return document
        if [failure["database"] for failure in document["failures"]] != ["victim"]:
            return f"failures {document['failures']}, not the victim's alone"
        records = {record["database"]: record for record in document["mix"]}
        expected = ({"victim"} if measuring else {"victim", "local"}) - (
            {"victim"} if point == "dataset load" else set()
        )
        if set(records) != expected:
            return f"mix records of {sorted(records)}, expected {sorted(expected)}"
        victim = records.get("victim")
        if victim is not None:
            if not sum(op["count"] for op in victim["operations"].values()):
                return "the victim's measured transactions were dropped"
            if victim.get("changes_found") is not None:
                return "a read-back claimed on a server that is gone"
            lost = [name for op in victim["operations"].values() for name in op["failures"]
                    if name in _LOST_ERRORS]  # fmt: skip
            if lost:
                return f"transactions failed with {lost} after the server was gone"
        return _after_kill(server, 15.0 if measuring else 60.0)

    env = {"ZODBSHOOTOUT_FAULT": fault} if fault else {}
    return Case("death", f"mix {kind} killed at {point}", argv, CELL_FAILED, 180.0, env,
                check, server=server, secrets=[Doomed.PASSWORD],
                failed_line="zodbshootout mix: victim: failed: ",
                own_lines=("zodbshootout mix: ",))  # fmt: skip


#: What a worker's transactions fail with once their server is gone (a conflict
#: before the kill is a failure like any other).
_LOST_ERRORS = frozenset(
    {"ClientDisconnected", "OperationalError", "InterfaceError", "ConnectionResetError"}
)


def _saved(path: pathlib.Path) -> dict | str:
    """The result file, or why there is none."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return f"no result file {path.name}"
    return document if isinstance(document, dict) else f"{path.name} is no result"


def _after_kill(server: Doomed | Interrupter, most: float) -> str | None:
    """Why the run did not end within *most* seconds of the kill, or was never killed."""
    if server.killed_at is None or server.ended is None:
        return f"the run never reached {server.trigger!r}"
    seconds = server.ended - server.killed_at
    return None if seconds < most else f"ended {seconds:.0f} s after the kill (over {most:g})"


# --- round 4: SIGINT and SIGTERM at every point of a run (issue 35, classes 2 and 3) ---


class Interrupter:
    """Sends the command *signum* once its progress line about *database* says *trigger*.

    The configuration is written when the case starts (as a Doomed server's is).
    """

    def __init__(
        self,
        config: pathlib.Path,
        text: str,
        signum: signal.Signals,
        database: str,
        trigger: str,
        pause: float = 0.0,
        tmp: pathlib.Path | None = None,
    ) -> None:
        self.config = config
        self.tmp = tmp  # the case's TMPDIR, removed after it
        self.text = text
        self.signum = signum
        self.database = database
        self.trigger = trigger
        self.pause = pause  # after the line: e.g. the workers start their warm-up
        self.killed_at: float | None = None
        self.ended: float | None = None

    def start(self) -> None:
        self.config.write_text(self.text)

    def kill(self, command: subprocess.Popen) -> None:
        time.sleep(self.pause)
        self.killed_at = time.monotonic()
        command.send_signal(self.signum)

    def stop(self) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _short_tmp() -> pathlib.Path:
    """A TMPDIR of a case's own, outside the sandbox, whose paths are long."""
    return pathlib.Path(tempfile.mkdtemp(prefix="zs-sig-", dir="/tmp"))


_EXIT_OF = {signal.SIGINT: 130, signal.SIGTERM: 143}


def signal_cases(box: Sandbox, rng: random.Random, scale: float) -> list[Case]:
    """SIGINT and SIGTERM in the classic run (populate, write, read, the next database)
    and in ``mix`` (dataset load, warm-up, measuring, read-back, the next database).

    Each case: exit 130 or 143, no traceback; the result file saved, marked
    interrupted with the signal's name, with what was finished and no
    failure; the temporary data directory removed (the case's own TMPDIR);
    the command over within seconds of the signal; no process left.
    """
    cases = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        for database, trigger in (
            ("victim", "repetition 2/3: populate"),
            ("victim", "repetition 2/3: write"),
            ("victim", "repetition 2/3: read"),
            ("local", "repetition 1/3: write"),
        ):
            cases.append(_classic_signal(box, signum, database, trigger))
        for point in _MIX_POINTS:
            cases.append(_mix_signal(box, signum, point))
    return cases


def _classic_signal(box: Sandbox, signum: signal.Signals, database: str, trigger: str) -> Case:
    directory = box.directory(f"signal {signum.name} {database} {trigger}")
    tmp = _short_tmp()
    config, saved = directory / "two.conf", directory / "run.json"
    text = sqlite("victim", directory / "victim") + sqlite("local", directory / "local")
    interrupter = Interrupter(config, text, signum, database, trigger, tmp=tmp)
    argv = [str(config), "-n", "20", "-c", "2", "-r", "3", "-o", str(saved)]

    def check() -> str | None:
        problem = _interrupted(saved, signum, tmp)
        if problem or isinstance(document := _saved(saved), str):
            return problem
        measured = {m["database"] for m in document["measurements"]}
        if database == "local" and "victim" not in measured:
            return "the first database's measurements are missing"
        return _after_kill(interrupter, 30.0)

    return Case("signal", f"run {signum.name} at {database} {trigger}", argv,
                frozenset({_EXIT_OF[signum]}), 180.0, {"TMPDIR": str(tmp)},
                check, server=interrupter)  # fmt: skip


#: Where a mix case's signal lands: -n, --warmup, -d, the fault hook, and the
#: progress line (its database, its text) after which, and a pause, it is sent.
_MIX_POINTS: dict[str, tuple[str, str, str, str | None, str, str, float]] = {
    "dataset load": ("100000", "0", "1", None, "victim", "loading the dataset", 0.0),
    "worker start": ("200", "60", "1", None, "victim", "warm-up 60 s", 0.05),
    "warm-up": ("200", "60", "1", None, "victim", "warm-up 60 s", 1.0),
    "measuring": ("200", "0", "60", None, "victim", "tx/s", 0.0),
    "read-back": ("200", "0", "1", "victim:readback:0:hang", "victim",
                  "reading every object's version back", 0.0),
    "next database": ("200", "0", "1", None, "local", "tx/s", 0.0),
}  # fmt: skip


def _mix_signal(box: Sandbox, signum: signal.Signals, point: str) -> Case:
    directory = box.directory(f"signal {signum.name} mix {point}")
    tmp = _short_tmp()
    config, saved = directory / "two.conf", directory / "mix.json"
    served = section("embeddedzeo", section("filestorage", f"path {directory / 'local.fs'}"))
    text = (
        "%import zodbshootout\n"
        + sqlite("victim", directory / "victim")
        + section("zodb", served, name="local")
    )
    objects, warmup, duration, fault, database, trigger, pause = _MIX_POINTS[point]
    interrupter = Interrupter(config, text, signum, database, trigger, pause, tmp)
    argv = ["mix", str(config), "-n", objects, "-c", "2", "-d", duration, "--warmup", warmup,
            "--interval", "0.5", "-o", str(saved)]  # fmt: skip
    # What the result keeps: finished databases (a read-back cut short keeps its
    # measurement, without the check's figure).
    kept = {"read-back": ["victim"], "next database": ["victim"]}.get(point, [])

    def check() -> str | None:
        problem = _interrupted(saved, signum, tmp)
        if problem or isinstance(document := _saved(saved), str):
            return problem
        records = document["mix"]
        if [record["database"] for record in records] != kept:
            return f"mix records of {[r['database'] for r in records]}, expected {kept}"
        for record in records:
            if not sum(op["count"] for op in record["operations"].values()):
                return "a kept record without transactions"
            if (record.get("changes_found") is None) != (point == "read-back"):
                return "the read-back's figure where it never finished, or missing"
        return _after_kill(interrupter, 30.0)

    env = {"TMPDIR": str(tmp)}
    if fault:
        env["ZODBSHOOTOUT_FAULT"] = fault
    return Case("signal", f"mix {signum.name} at {point}", argv,
                frozenset({_EXIT_OF[signum]}), 180.0, env, check,
                server=interrupter)  # fmt: skip


def _interrupted(saved: pathlib.Path, signum: signal.Signals, tmp: pathlib.Path) -> str | None:
    """Why *saved* is not an interrupted run's, or the temporary data is still there."""
    document = _saved(saved)
    if isinstance(document, str):
        return document
    if document.get("interrupted") is not True or document.get("signal") != signum.name:
        return f"saved as interrupted={document.get('interrupted')}, {document.get('signal')}"
    if document.get("failures"):
        return f"an interrupted run claims failures: {document['failures'][:1]}"
    left = [path.name for path in tmp.iterdir() if path.name.startswith("zodbshootout")]
    return f"temporary data left: {left}" if left else None


FAMILIES = {
    "options": option_cases,
    "config": config_cases,
    "result": result_cases,
    "cachesim": cachesim_cases,
    "rawkv": rawkv_cases,
    "target": target_cases,
    "fault": fault_cases,
    "secret": secret_cases,
    "bounds": bound_cases,
    "report": report_cases,
    "lock": lock_cases,
    "terminal": terminal_cases,
    "death": death_cases,
    "signal": signal_cases,
}


# --- running and judging ----------------------------------------------------------------

_FOOTNOTE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def run_case(case: Case, root: pathlib.Path) -> Outcome:
    if case.server is not None:
        for attempt in (1, 2):  # a busy machine's installer may fail once: not the tool's
            try:
                case.server.start()
                break
            except Exception as e:
                case.server.stop()
                if attempt == 2:
                    why = f"its private server did not start: {e}"
                    return Outcome(case, why, False, None, 0.0, "")
    try:
        return _run_case(case, root)
    finally:
        if case.server is not None:
            case.server.stop()


def _run_case(case: Case, root: pathlib.Path) -> Outcome:
    env = dict(os.environ)
    env.pop("ZODBSHOOTOUT_DATA", None)
    env.pop("ZODBSHOOTOUT_FAULT", None)
    env.update({"TMPDIR": str(root / "tmp"), **case.env})  # a case's own TMPDIR wins
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "zodbshootout", *case.argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root / "cwd",
        env=env,
        start_new_session=True,  # so that a hang is ended with its workers, by our PID
    )
    out, err, hung = _communicate(process, case)
    seconds = time.monotonic() - started
    if case.server is not None:
        case.server.ended = time.monotonic()
    left = _left_behind(process.pid)
    if hung:
        return Outcome(case, "hang", False, None, seconds, _tail(out, err))
    stdout = out.decode(errors="replace")
    stderr = err.decode(errors="replace")
    verdict, good = judge(case, process.returncode, stdout, stderr)
    foreign = [line for line in stderr.splitlines() if not line.startswith(case.own_lines)]
    if good and case.own_lines and foreign:
        verdict, good = f"another line on stderr: {foreign[0][:100]!r}", False
    if good and left:
        verdict, good = f"processes left behind: {left[:3]}", False
    if good and case.check is not None:
        problem = case.check()
        if problem:
            verdict, good = problem, False
    return Outcome(case, verdict, good, process.returncode, seconds, _tail(out, err))


def _communicate(process: subprocess.Popen, case: Case) -> tuple[bytes, bytes, bool]:
    """The command's stdout and stderr, and whether it hung (then its group is killed).

    With a private server, stderr is read line by line and the server is
    killed when a line about ``victim`` says the case's trigger.
    """
    server = case.server
    if server is None:
        try:
            out, err = process.communicate(timeout=case.timeout)
            return out, err, False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            return out, err, True
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = process.stdout, process.stderr
    chunks: list[bytes] = []
    lines: list[bytes] = []

    def watch() -> None:
        for line in iter(stderr.readline, b""):
            lines.append(line)
            text = line.decode(errors="replace")
            if (
                server.killed_at is None
                and f"{server.database}: " in text
                and server.trigger in text
            ):
                server.kill(process)

    readers = [threading.Thread(target=lambda: chunks.append(stdout.read())),
               threading.Thread(target=watch)]  # fmt: skip
    for reader in readers:
        reader.start()
    hung = False
    try:
        process.wait(timeout=case.timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(process.pid, signal.SIGKILL)
        _left_behind(process.pid)  # its workers in other groups, which hold the pipes
        process.wait()
    for reader in readers:
        reader.join()
    return b"".join(chunks), b"".join(lines), hung


def _left_behind(session: int) -> list[str]:
    """The command's processes still alive 20 s after it exited; killed, by PID."""
    from support.processes import wait_until_session_empty

    left = wait_until_session_empty(session)
    for entry in left:
        try:
            os.kill(int(entry.split()[0]), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    return left


#: What a terminal obeys: control characters but tab and newline, the bidi
#: overrides and the line separators (see src/zodbshootout/render/safe_text.py).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]"
)


def _leaked(case: Case, stdout: str, stderr: str) -> str | None:
    """What the output shows that it must not: a password, a file's control characters."""
    if case.secrets and any(secret in stdout + stderr for secret in case.secrets):
        return "a password in the output"
    if _UNSAFE.search(stdout + stderr):
        return "a control character in the output"
    if any(line.startswith(_FORGED) for line in (stdout + "\n" + stderr).splitlines()):
        return "a line forged by a file"
    return None


def judge(case: Case, code: int, stdout: str, stderr: str) -> tuple[str, bool]:
    leaked = _leaked(case, stdout, stderr)
    if leaked:
        return leaked, False
    if "internal error" in stderr or (
        "Traceback" in stdout + stderr and "--debug" not in case.argv
    ):
        return "internal error or traceback", False
    if code not in case.expect:
        if code == 0:
            return "exit 0 where a failure was expected", False
        return f"exit {code}, expected {'/'.join(map(str, sorted(case.expect)))}", False
    if code == 0 and case.warns and case.warns not in stderr:
        return "exit 0 without a warning", False
    if code == 0 and case.prefix and _mixed_lines(case.prefix, stderr):
        return "a line on stderr mixed with another", False
    if code == 2 and "--debug" in case.argv:
        return _judge_debug_usage(stdout, stderr)
    if code == 2:
        return _judge_usage(stdout, stderr)
    if code == 1:
        return _judge_failed(case, stdout, stderr)
    return ("accepted" if code == 0 else f"exit {code}"), True


def _judge_usage(stdout: str, stderr: str) -> tuple[str, bool]:
    lines = stderr.splitlines()
    if stdout or len(lines) != 1:
        return "exit 2 but not one line on stderr", False
    if len(lines[0]) > 2000:
        return "exit 2 with a line over 2000 characters", False
    return "usage", True


def _mixed_lines(prefix: str, stderr: str) -> bool:
    """Two lines written at once: *prefix* inside a line, or an empty line."""
    return any(prefix in line[1:] or not line.strip() for line in stderr.splitlines())


def _judge_debug_usage(stdout: str, stderr: str) -> tuple[str, bool]:
    """With --debug: the traceback, then the usage error's one line, last."""
    lines = stderr.splitlines()
    if stdout or not lines or ": error: " not in lines[-1]:
        return "exit 2 with --debug but no error line last", False
    return "usage", True


def _judge_failed_cells(stdout: str) -> tuple[str, bool]:
    notes = _FOOTNOTE.findall(stdout)
    if "n/a[" not in stdout or not notes:
        return "exit 1 without a footnote", False
    if any(not text.strip() or text.strip().endswith("not measured") for _n, text in notes):
        return "a footnote without a reason", False
    return "cell failed", True


def _judge_failed(case: Case, stdout: str, stderr: str) -> tuple[str, bool]:
    """Exit 1: the classic run's footnotes, or the line a mix case names."""
    if case.failed_line:
        return _judge_failed_line(case.failed_line, stdout + "\n" + stderr)
    return _judge_failed_cells(stdout)


def _judge_failed_line(line: str, output: str) -> tuple[str, bool]:
    """mix: one line says why the database failed, and it is no longer than 2000."""
    found = [text for text in output.splitlines() if line in text]
    if len(found) != 1:
        return f"{len(found)} lines with {line.strip()!r}, not one", False
    if len(found[0]) > 2000:
        return "a failure line over 2000 characters", False
    return "database failed", True


def _tail(out: bytes, err: bytes) -> str:
    text = (out[-600:] + b"\n--stderr--\n" + err[-900:]).decode(errors="replace")
    return text


def load() -> str:
    one, five, _fifteen = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--family", action="append", choices=sorted(FAMILIES), help="only these (repeatable)"
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="fraction of the generated cases (default 1)"
    )
    parser.add_argument("-j", "--jobs", type=int, default=3, help="cases run at once (default 3)")
    parser.add_argument("--seed", type=int, default=24, help="random seed (default 24)")
    parser.add_argument("--log", help="write every case's outcome to this file")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    families = args.family or list(FAMILIES)
    with tempfile.TemporaryDirectory(prefix="zodbshootout-adversarial-") as scratch:
        root = pathlib.Path(scratch)
        (root / "tmp").mkdir()
        (root / "cwd").mkdir()
        box = Sandbox(root / "cases")
        box.root.mkdir()
        cases = [case for family in families for case in FAMILIES[family](box, rng, args.scale)]
        print(f"{len(cases)} cases, {args.jobs} at a time; before: {load()}", file=sys.stderr)
        started = time.monotonic()
        # The slow families first, so that the pool ends with short cases.
        slow = ("death", "signal", "fault", "config")
        order = sorted(cases, key=lambda c: c.family not in slow)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            outcomes = list(pool.map(lambda c: run_case(c, root), order))
        elapsed = time.monotonic() - started
        for case in cases:
            if case.keep is not None:
                case.keep.close()  # type: ignore[attr-defined]
    report(outcomes, elapsed, args.log)
    return 0 if all(o.good for o in outcomes) else 1


def report(outcomes: list[Outcome], elapsed: float, log: str | None) -> None:
    by_family: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    good_by_family: collections.Counter = collections.Counter()
    for outcome in outcomes:
        by_family[outcome.case.family][outcome.verdict] += 1
        good_by_family[outcome.case.family] += outcome.good
    print(f"{len(outcomes)} cases in {elapsed:.0f} s; after: {load()}")
    print(f"{'family':<9} {'cases':>5} {'good':>5} {'bad':>4}  outcomes")
    for family, counts in by_family.items():
        good = good_by_family[family]  # an expected exit 3 (a gate's verdict) is good too
        total = sum(counts.values())
        detail = ", ".join(f"{verdict} {n}" for verdict, n in counts.most_common())
        print(f"{family:<9} {total:>5} {good:>5} {total - good:>4}  {detail}")
    bad = [o for o in outcomes if not o.good]
    total_good = len(outcomes) - len(bad)
    print(f"all       {len(outcomes):>5} {total_good:>5} {len(bad):>4}")
    slowest = max(outcomes, key=lambda o: o.seconds)
    print(f"slowest case: {slowest.case.family} {slowest.case.name!r}, {slowest.seconds:.1f} s")
    for outcome in bad:
        case = outcome.case
        print(f"\nBAD [{case.family}] {case.name}: {outcome.verdict} (exit {outcome.code})")
        print("  argv:", " ".join(a if len(a) < 80 else a[:40] + "..." for a in outcome.case.argv))
        print("  " + outcome.output.strip().replace("\n", "\n  ")[-1200:])
    if log:
        with open(log, "w") as file:
            for o in outcomes:
                file.write(
                    f"{o.case.family}\t{o.case.name}\t{o.verdict}\t{o.code}\t{o.seconds:.2f}\n"
                )


if __name__ == "__main__":
    sys.exit(main())
