"""The package's shape: every module imports, and its imports form no cycle.

The module map reads as the data flow (cli → config → runner → concurrency →
phases → storages → results → render); a cycle would mean two modules that
can't be understood (or changed) one without the other.  Every import
counts, also those inside functions and under TYPE_CHECKING: a lazy import
hides a cycle from Python, not from the reader.
"""

import ast
import importlib
import pathlib

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


def _imports(tree):
    return (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))


def import_graph():
    """module -> the zodbshootout modules it imports (anywhere in its code)."""
    known = set(module_names())
    graph = {}
    for module in known:
        tree = ast.parse(_path_of(module).read_text(encoding="utf-8"))
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
    assert "zodbshootout.concurrency.worker" in graph["zodbshootout.concurrency.processes"]
    assert "zodbshootout.storages" in graph["zodbshootout.caches"]
    # The storage kinds don't know about the layers above them.
    above = {"zodbshootout.runner", "zodbshootout.phases", "zodbshootout.concurrency"}
    for module, targets in graph.items():
        if module.startswith("zodbshootout.storages"):
            assert not targets & above, module
