"""The guides to adding a format, a subcommand, a workload and a storage kind name
files that exist.

Every path a guide names in double back-quotes (``render/formats.py``,
``tests/support/toy_format.py``) must be a file or folder of the
repository, or of the package for paths below it; a path with ``NAME`` in
it is the one the reader creates, and must be in a folder that exists.
"""

import pathlib
import re

import zodbshootout

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(zodbshootout.__file__).parent

#: A path in double back-quotes: a top folder of the repository or of the package.
NAMED_PATH = re.compile(
    r"``((?:src|docs|tests|cli|render|results|mix|cachesim|storages|concurrency|database)"
    r"/[\w./-]*[\w/])``"
)


def _section(text, title):
    """The section of *text* under the heading *title*, up to the next heading."""
    lines = text.splitlines()
    start = lines.index(title) + 2  # below the heading's underline
    headings = [
        index - 1
        for index in range(start + 1, len(lines))
        if re.fullmatch(r"=+|-+", lines[index]) and lines[index - 1].strip()
    ]
    return "\n".join(lines[start : headings[0] if headings else len(lines)])


def _guides():
    yield "docs/adding-a-format.rst", (ROOT / "docs/adding-a-format.rst").read_text()
    architecture = (ROOT / "docs/architecture.rst").read_text()
    yield "docs/architecture.rst", _section(architecture, "Adding a subcommand")
    workload = (ROOT / "docs/adding-a-workload.rst").read_text()
    yield "adding-a-workload: operation", _section(workload, "A new mix operation")
    yield "adding-a-workload: mode", _section(workload, "A new mode")
    yield "docs/adding-a-storage-kind.rst", (ROOT / "docs/adding-a-storage-kind.rst").read_text()


def _where(path):
    """The file or folder *path* names: from the repository's top, else from the package's."""
    top = path.split("/")[0]
    return (ROOT if top in ("src", "docs", "tests") else PACKAGE) / path


def named_paths(text):
    return NAMED_PATH.findall(text)


def test_the_path_finder_sees_the_paths():
    text = "See ``render/formats.py`` and ``src/x/NAME.py``, not ``FORMATS`` or ``-o``."
    assert named_paths(text) == ["render/formats.py", "src/x/NAME.py"]


def test_every_file_a_guide_names_exists():
    for guide, text in _guides():
        paths = named_paths(text)
        assert len(paths) >= 5, guide
        for path in paths:
            where = _where(path)
            if "NAME" in path:
                assert where.parent.is_dir(), f"{guide}: {path}: no folder {where.parent}"
            else:
                assert where.exists(), f"{guide}: {path} does not exist"


def test_the_format_guide_includes_a_file_that_exists_and_names_every_step():
    text = (ROOT / "docs/adding-a-format.rst").read_text()
    for included in re.findall(r"literalinclude:: (\S+)", text):
        assert (ROOT / "docs" / included).resolve().is_file(), included
    for step in ("render/NAME.py", "render/formats.py", "docs/architecture.rst", "CHANGES.rst"):
        assert step in text, step


def test_the_workload_guide_names_every_step_of_an_operation_and_of_a_mode():
    text = (ROOT / "docs/adding-a-workload.rst").read_text()
    operation = _section(text, "A new mix operation")
    for step in ("mix/workloads.py", "mix/operations.py", "cli/commands/mix.py", "CHANGES.rst"):
        assert step in operation, step
    mode = _section(text, "A new mode")
    for step in (
        "src/zodbshootout/NAME/",
        "results/NAME.py",
        "results/file.py",
        "render/NAME.py",
        "render/formats.py",
        "cli/commands/NAME.py",
        "cli/commands/__init__.py",
        "tests/unit/test_architecture.py",
        "docs/architecture.rst",
        "docs/index.rst",
        "CHANGES.rst",
    ):
        assert step in mode, step


def test_the_workload_guide_names_the_operations_where_they_are_defined():
    # The guide's "beside READ … POLL" holds only while they are mix/workloads.py's.
    from zodbshootout.mix import workloads

    assert workloads.OPERATIONS[0] == workloads.READ
    assert workloads.OPERATIONS[-1] == workloads.POLL
