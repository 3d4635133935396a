"""The package's shape: every module imports, and its imports form no cycle.

The module map reads as the data flow (cli → config → runner → concurrency →
phases → storages → results → render); a cycle would mean two modules that
can't be understood (or changed) one without the other.  Every import
counts, also those inside functions and under TYPE_CHECKING: a lazy import
hides a cycle from Python, not from the reader.
"""

import ast
import functools
import importlib
import pathlib
import textwrap

import pytest

import zodbshootout

PACKAGE_DIR = pathlib.Path(zodbshootout.__file__).parent


def module_names():
    names = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def _path_of(module):
    base = PACKAGE_DIR.parent.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@functools.cache
def _tree(module):
    """The syntax tree of *module*, parsed once per test process."""
    return ast.parse(_path_of(module).read_text(encoding="utf-8"))


def _imports(tree):
    return (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


@functools.cache
def _import_graph():
    return _read_import_graph()


def import_graph():
    """module -> the zodbshootout modules it imports (anywhere in its code).

    Read once per test process (the sources don't change during a run); each
    caller gets its own copy.
    """
    return {module: set(targets) for module, targets in _import_graph().items()}


def _read_import_graph():
    known = set(module_names())
    graph = {}
    for module in known:
        tree = _tree(module)
        package = module if _path_of(module).name == "__init__.py" else module.rpartition(".")[0]
        edges = set()
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                # "from package import module" imports the module; otherwise the package.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            edges.update(t for t in targets if t in known and t != module)
        graph[module] = edges
    return graph


def find_cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}
    stack = []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_every_module_imports():
    for name in module_names():
        if name != "zodbshootout.__main__":  # importing it runs the command line
            importlib.import_module(name)


def test_imports_have_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_the_layers():
    graph = import_graph()
    assert "zodbshootout.concurrency.task" in graph["zodbshootout.concurrency.processes"]
    assert "zodbshootout.storages" in graph["zodbshootout.phases.caches"]
    # The storage kinds don't know about the layers above them.
    above = {"zodbshootout.run.runner", "zodbshootout.phases.classic", "zodbshootout.concurrency"}
    for module, targets in graph.items():
        if module.startswith("zodbshootout.storages"):
            assert not targets & above, module


# --- The package layers --------------------------------------------------------

#: The modules at the top of the package: the flow's common ground.  They
#: import only each other (``__main__`` starts the command line).
BASE = {"children", "errors", "faults", "inputs", "outputfile", "reasons", "redact", ""}

#: Package -> the packages it may import (besides itself and BASE).  The flow
#: reads downwards: cli → run → concurrency → database → probes → options →
#: phases / rawkv → workload → storages → config, and results / render beneath
#: them all, so that ``show`` and ``compare`` need nothing that opens a database.
MAY_IMPORT = {
    "results": set(),
    "render": {"results"},
    # Trace records and replays, into results' records (render/ draws them).
    "cachesim": {"results"},
    # The ZConfig file: the storage kinds read its sections and re-parse it.
    "config": set(),
    # cachesim.records: the trace format a client cache writes (--cache-trace).
    "storages": {"config", "cachesim"},
    "workload": {"storages"},
    "phases": {"storages", "workload"},
    # RunOptions checks phase names and object shapes against their owners' records.
    "options": {"config", "phases", "results", "workload"},
    "probes": {"config", "options", "storages"},
    "database": {"config", "options", "storages", "workload", "probes"},
    "rawkv": {"config", "phases", "results", "workload"},
    "concurrency": {
        *("config", "database", "options", "phases", "probes"),
        *("results", "storages", "workload"),
    },
    # --rtt: proxies, the configuration rewritten through them, the RTT seen.
    "network": {"config", "database", "storages"},
    # run.ladder: a database's --rtt rows through proxies of network/.
    "run": {
        *("concurrency", "config", "database", "network", "options", "phases", "probes"),
        *("rawkv", "results", "storages", "workload"),
    },
    # A mix run: the same layers as a classic run, its own worker loop, on
    # the runner skeleton (run.skeleton).
    "mix": {
        *("concurrency", "config", "database", "network", "phases", "probes"),
        *("results", "run", "storages", "workload"),
    },
    # A replay: a mix's recorder and records, traces read by recording/, on the skeleton.
    "replay": {
        *("concurrency", "config", "database", "mix", "recording", "results", "run"),
        *("storages", "workload"),
    },
    # Big databases and their upkeep: a mode on the runner skeleton, which
    # reuses mix's runner for the pack under load.
    "maintenance": {
        *("concurrency", "config", "database", "mix", "probes", "results", "run"),
        *("storages", "workload"),
    },
    # The recorder is a library an application imports: nothing of the tool's
    # flow, only the top-level helpers (errors, inputs).
    "recording": set(),
    # versions: environments and rounds run the tool as a program; only their
    # results are read (a mix variant's histograms added up by results' helpers).
    "versions": {"results"},
    "cli": {
        *("cachesim", "concurrency", "config", "database", "mix", "network", "options"),
        *("maintenance", "phases"),
        *("probes", "recording", "render", "replay", "results", "run", "versions"),
        "workload",
    },
}


def package_of(module):
    """``zodbshootout.storages.zeo.kind`` -> ``storages``; a top-level module -> its name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(graph):
    found = []
    for module, targets in sorted(graph.items()):
        source = package_of(module)
        if source == "__main__":
            continue
        allowed = BASE if source in BASE else BASE | MAY_IMPORT[source] | {source}
        found += [f"{module} -> {t}" for t in sorted(targets) if package_of(t) not in allowed]
    return found


def test_every_package_has_a_layer():
    packages = {package_of(m) for m in module_names()} - BASE - {"__main__"}
    assert packages == set(MAY_IMPORT)


def test_packages_import_only_the_layers_beneath_them():
    assert layer_violations(import_graph()) == []


def test_the_layer_rule_sees_a_violation():
    graph = {"zodbshootout.render.table": {"zodbshootout.storages.base"}}
    assert layer_violations(graph) == ["zodbshootout.render.table -> zodbshootout.storages.base"]


def package_graph(graph):
    """package -> the packages its modules import (top-level modules are packages of one)."""
    packages = {}
    for module, targets in graph.items():
        source = package_of(module)
        edges = packages.setdefault(source, set())
        edges.update(package_of(t) for t in targets if package_of(t) != source)
    return packages


def test_packages_import_no_cycle():
    """Not only modules: a package whose modules import one another's packages
    round in a circle can't be read (or moved) one without the other."""
    cycle = find_cycle(package_graph(import_graph()))
    assert cycle is None, " -> ".join(cycle)


def test_the_allowed_layers_have_no_cycle():
    cycle = find_cycle({source: set(targets) for source, targets in MAY_IMPORT.items()})
    assert cycle is None, " -> ".join(cycle)


def test_the_package_graph_sees_a_cycle_between_packages():
    # No module cycle (a -> b.x -> c -> a.y), but a package cycle a -> b -> c -> a.
    graph = {
        "zodbshootout.a.x": {"zodbshootout.b.x"},
        "zodbshootout.b.x": {"zodbshootout.c"},
        "zodbshootout.c": {"zodbshootout.a.y"},
        "zodbshootout.a.y": set(),
    }
    assert find_cycle(graph) is None
    assert find_cycle(package_graph(graph)) == ["a", "b", "c", "a"]


# --- Storage families stay behind StorageKind ----------------------------------

#: Packages that ask a storage only through the StorageKind hooks and the
#: registry (zodbshootout.storages), never a family's own modules.
KIND_BLIND = ("run", "database", "concurrency", "render")

#: The modes: packages that build their own tasks and results (render/ draws
#: their results from results/, never from the mode).
MODE_PACKAGES = ("mix", "cachesim", "rawkv", "versions", "network", "replay")


def storage_families():
    """``zeo``, ``relstorage``, ...: the modules or packages of storages/ that define a kind."""
    from zodbshootout import storages

    return {type(kind).__module__.split(".")[2] for kind in storages.KINDS}


def family_imports(graph, packages=KIND_BLIND):
    families = tuple(f"zodbshootout.storages.{family}" for family in storage_families())
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if package_of(module) in packages
        for target in sorted(targets)
        if target in families or target.startswith(tuple(f"{f}." for f in families))
    ]


def test_run_database_concurrency_and_render_import_no_storage_family():
    assert family_imports(import_graph()) == []


def test_the_family_rule_sees_a_family_import():
    assert {"zeo", "relstorage", "filestorage", "memory"} <= storage_families()
    graph = {
        "zodbshootout.run.runner": {"zodbshootout.storages", "zodbshootout.storages.zeo.server"},
        "zodbshootout.database.state": {"zodbshootout.storages.relstorage"},
        "zodbshootout.concurrency.x": {"zodbshootout.storages.base"},
        "zodbshootout.mix.runner": {"zodbshootout.storages.zeo.server"},
    }
    assert family_imports(graph) == [
        "zodbshootout.database.state -> zodbshootout.storages.relstorage",
        "zodbshootout.run.runner -> zodbshootout.storages.zeo.server",
    ]


def test_render_imports_no_mode_package():
    graph = import_graph()
    found = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if package_of(module) == "render"
        for target in sorted(targets)
        if package_of(target) in MODE_PACKAGES
    ]
    assert found == []
    assert not MAY_IMPORT["render"] & set(MODE_PACKAGES)


def test_results_and_render_need_nothing_that_opens_a_database():
    below = {"storages", "concurrency", "phases", "database", "run", "probes", "rawkv"}
    assert not (MAY_IMPORT["results"] | MAY_IMPORT["render"]) & below
    assert not MAY_IMPORT["storages"] & {"run", "concurrency", "phases", "cli"}


# --- Only cli/ prints ---------------------------------------------------------

#: Modules outside cli/ that may write to the standard streams, and why.
WRITES_STANDARD_STREAMS = {
    # '-' as an output file name means stdout (hyperfine's convention).
    "zodbshootout.outputfile",
    # The embedded ZEO server is a program of its own: it reports its
    # address on stdout and a failure on stderr to the runner that started it.
    "zodbshootout.storages.zeo.server",
    # So is the delaying proxy: its addresses and answers go to the run that owns it.
    "zodbshootout.network.proxy",
    # And a maintenance operation's process: its record goes to maintain's runner.
    "zodbshootout.maintenance.child",
}


def _prints(tree):
    """Line numbers of print() calls and of sys.stdout / sys.stderr writes."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print":
            lines.append(node.lineno)
        elif isinstance(func, ast.Attribute) and func.attr == "write":
            target = ast.unparse(func.value)
            if target.startswith(("sys.stdout", "sys.stderr")):
                lines.append(node.lineno)
    return lines


def test_only_cli_prints():
    found = []
    for module in module_names():
        if package_of(module) in ("cli", "__main__") or module in WRITES_STANDARD_STREAMS:
            continue
        tree = _tree(module)
        found += [f"{module}:{line}" for line in _prints(tree)]
    assert found == []


def test_cli_prints_only_through_say():
    """Every line cli/ prints is made safe for the terminal in one place (issue 35, 12)."""
    found = []
    for module in module_names():
        if package_of(module) != "cli" or module == "zodbshootout.cli.say":
            continue
        tree = ast.parse(_path_of(module).read_text(encoding="utf-8"))
        found += [f"{module}:{line}" for line in _prints(tree)]
    assert found == []


def test_the_print_finder_finds_prints():
    tree = ast.parse("print(1)\nsys.stderr.write('x')\nconsole.print(2)\nfile.write('y')\n")
    assert _prints(tree) == [1, 2]


# --- No switching on a storage's class outside storages/ ----------------------

_NAME_ATTRIBUTES = {"__name__", "__module__", "__qualname__", "__class__"}


#: How code reads a storage kind's name: ``kind.name``, ``info["kind"]``, ``.get("kind")``.
_KIND_READS = ("kind.name", "['kind']", "get('kind')", "kind_of(")


def _switches_on_names(tree):
    """Comparisons of a class's or module's name, or of a storage kind's name with a string.

    A module's own ``__name__`` (its main guard) is no class; a variable
    that happens to be called ``kind`` (a message's) is no storage kind.
    """
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        names = {n.attr for o in operands for n in ast.walk(o) if isinstance(n, ast.Attribute)}
        strings = [o for o in operands if isinstance(o, ast.Constant) and isinstance(o.value, str)]
        text = ast.unparse(node).replace('"', "'")
        if names & _NAME_ATTRIBUTES or (strings and any(read in text for read in _KIND_READS)):
            found.append(node.lineno)
    return sorted(set(found))


def test_nothing_outside_storages_switches_on_a_storage_class():
    found = []
    for module in module_names():
        if package_of(module) == "storages":
            continue
        tree = _tree(module)
        found += [f"{module}:{line}" for line in _switches_on_names(tree)]
    assert found == []


def test_the_switch_finder_finds_switches():
    source = (
        "if type(s).__name__ == 'FileStorage': pass\n"
        "if s.__module__.startswith('x') or s.__module__ in names: pass\n"
        "if info['kind'] == 'rawkv': pass\n"
        "if storages.kind_of(s).name == 'zeo': pass\n"
        "if kind.name == other: pass\n"
        "if phase.name == 'add': pass\n"
        "if __name__ == '__main__': pass\n"
        "if message_kind == 'ready': pass\n"
    )
    assert _switches_on_names(ast.parse(source)) == [1, 2, 3, 4]


# --- Functions stay short ---------------------------------------------------------

MAX_FUNCTION_LINES = 60

#: Declarative argparse code: one add_argument after another, nothing to split.
ARGPARSE_BUILDERS = {
    "zodbshootout.cli.arguments.build_parser",
    "zodbshootout.cli.commands.versions.add_arguments",
}


def long_functions_in(module, tree):
    """Functions, methods and nested functions of *tree* over the limit (argparse exempt)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES and f"{module}.{node.name}" not in ARGPARSE_BUILDERS:
                found.append(f"{module}.{node.name}: {lines} lines")
    return found


def long_functions():
    found = []
    for module in module_names():
        tree = _tree(module)
        found += long_functions_in(module, tree)
    return found


def test_no_function_is_over_sixty_lines():
    assert long_functions() == []


def test_the_length_check_sees_methods_and_nested_functions():
    body = "x = 1\n" * MAX_FUNCTION_LINES  # with its def line, one over the limit
    source = "\n".join(
        [
            "class C:",
            textwrap.indent(f"def method(self):\n{textwrap.indent(body, '    ')}", "    "),
            "def outer():",
            textwrap.indent(f"def inner():\n{textwrap.indent(body, '    ')}", "    "),
            f"async def coroutine():\n{textwrap.indent(body, '    ')}",
            "def short():\n    pass",
            f"def build_parser():\n{textwrap.indent(body, '    ')}",
        ]
    )
    found = long_functions_in("zodbshootout.cli.arguments", ast.parse(source))
    assert sorted(entry.split(":")[0].rpartition(".")[2] for entry in found) == [
        "coroutine",
        "inner",
        "method",
        "outer",
    ]


# --- docs/architecture.rst is the tree of the package ---------------------------------

ARCHITECTURE = PACKAGE_DIR.parents[1] / "docs" / "architecture.rst"


def documented_tree(text):
    """The paths the tree of architecture.rst lists (folders end with '/')."""
    paths = []
    folders = []
    for line in text.splitlines():
        marker = max(line.find("├── "), line.find("└── "))
        if marker < 0:
            continue
        depth = marker // 4 - 1  # the block is indented by four spaces
        name = line[marker + 4 :].split()[0]
        del folders[depth:]
        paths.append("/".join([*folders, name]))
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
    return paths


def package_tree():
    paths = []
    for path in PACKAGE_DIR.rglob("*"):
        relative = path.relative_to(PACKAGE_DIR)
        if "__pycache__" in relative.parts or path.suffix == ".pyc":
            continue
        if path.name == "__init__.py" and len(relative.parts) > 1:
            continue  # a package is listed as its folder
        paths.append(relative.as_posix() + ("/" if path.is_dir() else ""))
    return paths


def test_the_architecture_page_lists_every_file_of_the_package():
    documented = documented_tree(ARCHITECTURE.read_text(encoding="utf-8"))
    assert sorted(documented) == sorted(package_tree())
    assert len(documented) == len(set(documented))


def test_the_tree_reader_nests_folders():
    text = "    ├── a/   x\n    │   └── b.py   y\n    └── c.py   z\n"
    assert documented_tree(text) == ["a/", "a/b.py", "c.py"]


# --- The tests: a quick run without processes, files named for what they test ------

TESTS = PACKAGE_DIR.parents[1] / "tests"


def test_a_unit_test_cannot_start_a_subprocess():
    """tests/conftest.py refuses process starts in tests/unit (support/no_processes.py)."""
    import subprocess
    import sys

    from support.no_processes import ProcessStarted

    with pytest.raises(ProcessStarted, match="belong in tests/integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_unit_test_cannot_start_a_worker_process_in_any_start_method():
    import multiprocessing
    import os

    from support.no_processes import ProcessStarted

    for method in multiprocessing.get_all_start_methods():
        process = multiprocessing.get_context(method).Process(target=print)
        with pytest.raises(ProcessStarted):
            process.start()
    with pytest.raises(ProcessStarted):
        os.fork()


def owners_of_test_names():
    """What a test file may be named after: a package or a top-level module."""
    owners = {p.name for p in PACKAGE_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"}
    owners |= {p.stem for p in PACKAGE_DIR.glob("*.py") if not p.stem.startswith("_")}
    return owners


def misnamed_tests(names, owners):
    """Test file names that don't start with the package or top-level module they test.

    The rule (docs/architecture.rst, "Where the tests are"): ``test_<package>_<module>.py``
    or ``test_<package>_<topic>.py``, or ``test_<module>.py`` for a top-level module.
    """
    return sorted(
        name
        for name in names
        if not any(name[5:-3] == o or name[5:-3].startswith(f"{o}_") for o in owners)
    )


#: Test files named before the rule (docs/architecture.rst): new ones follow it.
NAMED_BEFORE_THE_RULE = {
    "unit": {
        *("architecture", "bad_input", "cache_sizing", "calibration", "cells", "ci_script"),
        *("compare", "dbstate", "diagnostics", "extra_benchmarks", "format_registry"),
        *("guides", "history", "host_list", "hostile_result_files", "indexes", "insight"),
        *("limits", "load_notes", "lock_table", "mode_records", "modes_and_shapes", "noise"),
        *("old_mix_results", "output_targets", "plot", "precision", "progress"),
        *("pyperf_export", "quiet_failures", "report_html", "resultfile", "rounds"),
        *("rtt_ladder", "runner_failures", "secret_paths", "smaller_errors", "stage", "stats"),
        *("stats_inference", "subcommands", "table_writer", "zeo_trace_records"),
    },
    "integration": {
        *("benchmarks", "blobs", "buildout", "cache_trace", "ci_recipe", "dbinfo"),
        *("delay_proxy", "delay_proxy_hosts", "diagnostics_cli", "doc_commands", "docs"),
        *("first_commit", "floor_script", "hardening", "hosts", "hosts_local_script"),
        *("hosts_netns", "insight_run", "interrupt", "light_imports", "mariadb_compat"),
        *("memcached", "modes", "no_counters", "pg_locks", "provenance", "provision"),
        *("relstorage_facts", "remote_sample_steps", "report", "result_files", "round_trips"),
        *("rtt_servers", "safety", "sample_conf", "secrets", "sqlite_planner", "storage_size"),
        *("suite_safety", "toy_format", "truth", "two_hosts", "zap", "zeo_server"),
    },
}


@pytest.mark.parametrize("folder", sorted(NAMED_BEFORE_THE_RULE))
def test_test_files_are_named_for_what_they_test(folder):
    names = [p.name for p in (TESTS / folder).glob("test_*.py")]
    before = {f"test_{stem}.py" for stem in NAMED_BEFORE_THE_RULE[folder]}
    assert misnamed_tests(names, owners_of_test_names()) == sorted(before & set(names))
    # An old name that is gone (renamed or moved) leaves the list.
    assert before <= set(names), sorted(before - set(names))


def test_the_naming_rule_reads_package_and_module():
    owners = {"render", "results", "redact", "mix"}
    names = ["test_render_csv.py", "test_redact.py", "test_mix_parts.py", "test_rendering.py"]
    assert misnamed_tests(names, owners) == ["test_rendering.py"]


def test_no_two_test_files_share_a_name():
    # The test folders are not packages: pytest imports each file by its
    # name, and a second file of the same name fails the whole collection
    # ("import file mismatch") in whichever worker meets both.
    seen: dict[str, pathlib.Path] = {}
    clashes = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(TESTS)} ~ {path.relative_to(TESTS)}")
        seen.setdefault(path.name, path)
    assert clashes == []
