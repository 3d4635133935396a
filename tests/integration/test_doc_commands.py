"""Every command that README.rst and docs/*.rst show in a literal block runs.

The commands are read from the documents (so a new one is run without anyone
adding it here), page by page in the order shown, each page in a fresh
directory that holds a copy of ``etc/``, as a user at the top of a checkout
would type them.  A run of a configuration gets ``-n 10 -r 1`` (its own
values replaced, or the options added) and ``--min-objects 100`` where it
asks for a million; everything else runs as written.  ``etc/sample.conf`` runs against
the real local servers, in databases, a ZEO server and a memcached of this
test's own (so that it can run beside the other tests).

The exceptions are few and each says why (:data:`NOT_RUN`).

Running them all takes minutes (about forty runs of a configuration), more
than the test suite may spend, so the suite reads the commands and checks
the exceptions, and the runs themselves happen where
``ZODBSHOOTOUT_DOC_COMMANDS=1`` is set: ``.ci/run`` sets it for this module
after the suite.
"""

from __future__ import annotations

import bz2
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

from conftest import (
    MYSQL_HOST,
    MYSQL_PORT,
    POSTGRESQL_HOST,
    POSTGRESQL_PORT,
    ROOT,
    postgresql_admin,
    reachable,
    shared_servers_refusal,
)
from support import local

pytestmark = [pytest.mark.slow, pytest.mark.postgresql, pytest.mark.mysql, pytest.mark.zeo]

DOCUMENTS = [ROOT / "README.rst", *sorted((ROOT / "docs").glob("*.rst"))]

#: A command line: optional VAR=value words, then a program a reader would type.
COMMAND = re.compile(
    r"^(?:[A-Z_]+=\S+\s+)*(?:\.venv/bin/|bin/)?"
    r"(?:zodbshootout|python3?|pip|sudo|mkdir|runzeo|buildout|less|test)\s"
)

#: Commands not run here, and why.
NOT_RUN = {
    r"pip install|-m venv|buildout|^bin/test": "installs the tool: the suite itself runs in "
    "such an install, and tests/integration/test_buildout.py makes one with buildout",
    r"-m pytest": "the test suite itself (.ci/run runs the README's command word for word)",
    r"^sudo etc/provision\.sh": "changes the system: .ci/run runs it before the tests",
    r"^runzeo -C etc/zeo\.conf": "binds the fixed port 24003: tests/integration/"
    "test_sample_conf.py starts it as shown; the commands here use a ZEO server of their own",
    r"benchmarks/(stability|floor|hosts_local)\.py": "takes minutes: it measures the machine "
    "or the harness's overhead, it is not a test",
    r"\bCONFIG\b": "a synopsis (CONFIG is a placeholder); the --hosts example names other "
    "machines, which tests/integration/test_two_hosts.py makes in network namespaces",
    r"^zodbshootout versions (?!--clear-cache)|versions\.json": "builds environments from "
    "the package index (minutes; checkouts and Pythons of the reader's): "
    "tests/integration/test_versions.py runs versions and compare on its file with two ZEO "
    "releases, test_versions_errors.py pip's way and the errors, test_ci_recipe.py a checkout",
}

#: Exit codes a command may end with besides 0: a CI gate's verdicts (slower, inconclusive).
GATE_CODES = {"--fail-if-slower": {1, 3}}

#: The smallest settings a documented run is given: its own value replaced, or added.
SMALL = {"-n": "10", "-r": "1"}


def smaller(words: list[str]) -> list[str]:
    """*words* with -n and -r set to SMALL's (-n kept with -p: the profiles' names hold it),
    and --min-objects 100 instead of a million."""
    settings = {**SMALL, "--min-objects": "100"}
    if "-p" in words:
        del settings["-n"]
    words = list(words)
    for option, value in settings.items():
        if option in words:
            words[words.index(option) + 1] = value
        elif option != "--min-objects":
            words += [option, value]
    return words


#: Files the documents assume the reader has saved, and how this test makes them.
PREPARED = {
    name: f"zodbshootout etc/local.conf -r 2 -o {name}"
    for name in ("base.json", "pr.json", "run.json")
}


@dataclass(frozen=True)
class Command:
    document: str
    line: int
    text: str

    @property
    def skipped(self) -> str | None:
        return next(
            (why for pattern, why in NOT_RUN.items() if re.search(pattern, self.text)), None
        )


def literal_blocks(text: str) -> list[list[tuple[int, str]]]:
    """The literal blocks (after ``::``) of a reStructuredText text, lines numbered from 1.

    A ``.. code-block:: console`` block is a session: only its lines after a
    ``$`` prompt are commands (the prompt dropped); the others are output.
    """
    lines = text.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        console = line.strip() == ".. code-block:: console"
        if not console and (not line.rstrip().endswith("::") or line.lstrip().startswith(".. ")):
            continue
        indent = len(line) - len(line.lstrip())
        block = []
        while index < len(lines) and (
            not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent
        ):
            block.append((index + 1, lines[index]))
            index += 1
        if console:
            block = [
                (number, entry.replace("$ ", "", 1))
                for number, entry in block
                if entry.lstrip().startswith("$ ")
            ]
        blocks.append(block)
    return blocks


def _balanced(text: str) -> bool:
    """Whether *text*'s quotes are closed (a quoted argument may span lines)."""
    try:
        shlex.split(text)
    except ValueError:
        return False
    return True


def block_commands(path: pathlib.Path) -> list[list[Command]]:
    """Each literal block's commands (continuation lines joined, comments dropped)."""
    found = []
    for block in literal_blocks(path.read_text(encoding="utf-8")):
        commands: list[Command] = []
        pending = ""
        start = 0
        if not any(line.strip() for _, line in block):
            continue
        margin = min(len(line) - len(line.lstrip()) for _, line in block if line.strip())
        for number, line in block:
            if pending:
                # A line continued with \ joins with a space, one inside quotes with a newline.
                text = (
                    pending[:-1].rstrip() + " " + line.strip()
                    if pending.endswith("\\")
                    else pending + "\n" + line[margin:]
                )
            else:
                text, start = line.strip(), number
            if text.endswith("\\") or (COMMAND.match(text) and not _balanced(text)):
                pending = text
                continue
            pending = ""
            if not _balanced(text):
                continue
            text = re.sub(r"\s+#[^'\"]*$", "", text)
            if COMMAND.match(text) and not re.match(r"zodbshootout \[", text):
                for part in text.split(" && "):
                    commands.append(Command(path.name, start, part.strip()))
        if commands:
            found.append(commands)
    return found


BLOCKS = [commands for path in DOCUMENTS for commands in block_commands(path)]


def test_documented_runs_get_the_smallest_settings():
    assert smaller(["x.conf", "-n", "100,1000", "-c", "1,2", "--min-objects", "1000000"]) == [
        "x.conf", "-n", "10", "-c", "1,2", "--min-objects", "100", "-r", "1",
    ]  # fmt: skip
    assert smaller(["x.conf", "cold", "-r", "5", "-p", "profiles"]) == [
        "x.conf", "cold", "-r", "1", "-p", "profiles",
    ]  # fmt: skip


def test_the_reader_finds_commands_and_joins_continuations(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text(
        "Text::\n\n    zodbshootout a.conf -n 1 \\\n        -r 2   # comment\n"
        "    some output\n\n.. code::\n\n    not a block\n\nMore::\n\n"
        "    mkdir -p var && runzeo -C etc/zeo.conf\n    zodbshootout [OPTIONS] CONFIG\n"
        "\n.. code-block:: console\n\n   $ zodbshootout mix b.conf -d 2\n"
        "   zodbshootout mix: b: loading the dataset\n"
    )
    assert [[c.text for c in block] for block in block_commands(page)] == [
        ["zodbshootout a.conf -n 1 -r 2"],
        ["mkdir -p var", "runzeo -C etc/zeo.conf"],
        ["zodbshootout mix b.conf -d 2"],
    ]
    # The documents hold commands, and most of them run.
    every = [c for block in BLOCKS for c in block]
    assert len(every) > 30
    assert sum(1 for c in every if c.skipped) < len(every) // 2


# --- The directory the commands run in ----------------------------------------------------


@pytest.fixture(scope="module")
def sample_servers(tmp_path_factory):
    """etc/sample.conf's servers, as this module's own: databases, ZEO, memcached.

    Yields the text replacements that point a copy of the sample at them, or the
    reason they can't be had.
    """
    reasons = [shared_servers_refusal("postgresql"), shared_servers_refusal("mysql")]
    reasons += [reachable(MYSQL_HOST, MYSQL_PORT), reachable(POSTGRESQL_HOST, POSTGRESQL_PORT)]
    for module in ("psycopg2", "MySQLdb", "pylibmc", "pymysql"):
        try:
            __import__(module)
        except ImportError:
            reasons.append(f"{module} is not installed (pip install '.[all]')")
    if any(reasons):
        yield next(r for r in reasons if r)
        return
    suffix = f"docs{os.getpid()}"
    names = {
        "zodbshootout_pg": f"zodbshootout_pg_{suffix}",
        "zodbshootout_mysql_mc": f"zodbshootout_mc_{suffix}",
        "zodbshootout_mysql": f"zodbshootout_my_{suffix}",
    }
    admin = postgresql_admin()
    import pymysql

    mysql = pymysql.connect(host=MYSQL_HOST, port=MYSQL_PORT, user="root", password="")
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {names['zodbshootout_pg']}")
        cursor.execute(f"CREATE DATABASE {names['zodbshootout_pg']} OWNER zodbshootout")
    with mysql.cursor() as cursor:
        for name in list(names.values())[1:]:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
            cursor.execute(f"CREATE DATABASE {name}")
            cursor.execute(f"GRANT ALL PRIVILEGES ON {name}.* TO 'zodbshootout'@'127.0.0.1'")
            cursor.execute(f"GRANT ALL PRIVILEGES ON {name}.* TO 'zodbshootout'@'localhost'")
    directory = tmp_path_factory.mktemp("zeo")
    try:
        with local.runzeo(directory / "zeo.fs") as (_zeo, zeo_port), local.memcached() as mc_port:
            yield {**names, ":24003": f":{zeo_port}", ":24004": f":{mc_port}"}
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {names['zodbshootout_pg']} WITH (FORCE)")
        with mysql.cursor() as cursor:
            for name in list(names.values())[1:]:
                cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()
        mysql.close()


def workspace(tmp_path: pathlib.Path, servers: dict[str, str] | str) -> pathlib.Path:
    """A directory like the top of a checkout: etc/ (the sample on this test's servers)."""
    shutil.copytree(ROOT / "etc", tmp_path / "etc")
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")  # scripts the docs run
    if isinstance(servers, dict):
        sample = tmp_path / "etc" / "sample.conf"
        text = sample.read_text()
        for old, new in servers.items():
            text = text.replace(old, new)
        sample.write_text(text)
    # Inputs that the documents assume the reader has.
    (tmp_path / "WebSearch1.spc.bz2").write_bytes(
        bz2.compress(
            "".join(f"0,{(i * 7) % 50},4096,r,{i * 0.01:.2f}\n" for i in range(400)).encode()
        )
    )
    return tmp_path


def argv(command: Command) -> tuple[list[str], dict[str, str]]:
    """The program and arguments to run, and the environment variables the line sets."""
    words = shlex.split(command.text)
    env = {}
    while "=" in words[0] and words[0].split("=")[0].isupper():
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    program = words[0].rsplit("/", 1)[-1]
    if program == "zodbshootout":
        words = [sys.executable, "-m", "zodbshootout", *words[1:]]
        if words[3].endswith(".conf"):  # a run, not a subcommand: small and quick
            words = smaller(words)
    elif program in ("python", "python3"):
        words = [sys.executable, *words[1:]]
    return words, env


def run(command: Command, directory: pathlib.Path, prepare: bool = True) -> None:
    words, env = argv(command)
    for name, making in PREPARED.items():
        if prepare and name in words and not (directory / name).exists():
            run(Command(command.document, command.line, making), directory, prepare=False)
    done = subprocess.run(
        words,
        cwd=directory,
        env={
            **{k: v for k, v in os.environ.items() if k != "ZODBSHOOTOUT_DATA"},
            # versions --clear-cache clears this test's cache, not the reader's.
            "ZODBSHOOTOUT_CACHE_DIR": str(directory / ".cache"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    allowed = {0}.union(*(codes for option, codes in GATE_CODES.items() if option in words))
    assert done.returncode in allowed, (
        f"{command.document}:{command.line}: {command.text}\n"
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


#: Each document's commands, in order: a reader follows a page from top to bottom, so a
#: later block may use what an earlier one made (the traces of a traced run).
PAGES = {path.name: [c for block in block_commands(path) for c in block] for path in DOCUMENTS}
PAGES = {name: commands for name, commands in PAGES.items() if commands}


@pytest.mark.parametrize("commands", list(PAGES.values()), ids=list(PAGES))
def test_documented_commands_run(commands, tmp_path, request):
    if not os.environ.get("ZODBSHOOTOUT_DOC_COMMANDS"):
        pytest.skip("takes minutes: .ci/run runs it with ZODBSHOOTOUT_DOC_COMMANDS=1")
    sample_servers = request.getfixturevalue("sample_servers")
    needs_sample = any("etc/sample.conf" in c.text and not c.skipped for c in commands)
    if needs_sample and isinstance(sample_servers, str):
        pytest.skip(f"etc/sample.conf's servers: {sample_servers}")
    runnable = [c for c in commands if not c.skipped]
    if not runnable:
        pytest.skip("; ".join(sorted({c.skipped or "" for c in commands})))
    directory = workspace(tmp_path, sample_servers)
    for command in runnable:
        run(command, directory)


def test_readme_example_table_is_the_generated_one():
    """README's table is docs/examples/local.txt (made by docs/make_examples.py from a run)."""
    generated = (ROOT / "docs" / "examples" / "local.txt").read_text(encoding="utf-8")
    rows = [line for line in generated.splitlines() if line.startswith(('"', "Note:"))]
    readme = (ROOT / "README.rst").read_text(encoding="utf-8")
    assert rows
    assert all(f"    {row}\n" in readme for row in rows)
    assert "Open Connection" in generated  # every phase of a default run
