"""Every input path is read only if it is a regular file of a sensible size.

A character device that never ends (like /dev/zero, made here with mknod in
the test's own directory), a FIFO nobody writes to, and a file larger than
its kind can be are refused in one line, exit 2, before anything is read.
The cases that run the command in a child process (so that a hang is a
timeout) are in tests/integration/test_inputs_fifos.py.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat

import pytest

from zodbshootout import inputs
from zodbshootout.errors import UsageError


def run_main(*argv: str) -> tuple[int, str, str]:
    from zodbshootout.cli import entry

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def zero_device(tmp_path):
    """A character device like /dev/zero (1, 5), inside tmp_path."""
    path = tmp_path / "zero"
    try:
        os.mknod(path, 0o444 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("mknod needs root")
    return str(path)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("caf\u00e9\n", encoding="utf-8")
    assert inputs.read_text(str(path), "the configuration", 100) == "caf\u00e9\n"


@pytest.mark.parametrize("kind", ["zero_device", "fifo", "directory"])
def test_a_non_regular_file_is_refused_without_reading(kind, request, tmp_path):
    path = str(tmp_path) if kind == "directory" else request.getfixturevalue(kind)
    with pytest.raises(UsageError) as caught:
        inputs.read_bytes(path, "the configuration", 1 << 20)
    expected = {"zero_device": "a character device", "fifo": "a FIFO", "directory": "a directory"}
    assert str(caught.value) == (
        f"refusing to read the configuration {path}: it is {expected[kind]}, not a regular file"
    )


def test_a_file_over_the_bound_is_refused(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as file:
        file.truncate(2 << 20)  # sparse: nothing is written
    with pytest.raises(UsageError, match=r"2 MiB is more than result file can be \(1 MiB"):
        inputs.read_bytes(str(path), "result file", 1 << 20)


def test_a_missing_file_names_the_reason(tmp_path):
    with pytest.raises(UsageError, match=r"cannot read result file .*: No such file"):
        inputs.read_bytes(str(tmp_path / "missing"), "result file", 10)


def test_a_device_as_configuration_is_one_line_exit_2(zero_device):
    code, stdout, stderr = run_main(zero_device, "-n", "5")
    assert (code, stdout) == (2, ""), stderr
    assert stderr == (
        f"zodbshootout: error: refusing to read the configuration {zero_device}: "
        "it is a character device, not a regular file\n"
    )


@pytest.mark.parametrize("subcommand", ["show", "history", "export"])
def test_a_device_as_result_file_is_one_line_exit_2(zero_device, subcommand, tmp_path):
    extra = ["-o", str(tmp_path / "out.json")] if subcommand == "export" else []
    code, stdout, stderr = run_main(subcommand, zero_device, *extra)
    assert (code, stdout) == (2, ""), stderr
    assert stderr.count("\n") == 1, stderr
    assert "it is a character device, not a regular file" in stderr


def test_an_oversized_configuration_and_result_file_are_refused(tmp_path):
    config = tmp_path / "huge.conf"
    with open(config, "wb") as file:
        file.truncate(inputs.MAX_CONFIG_BYTES + 1)
    code, _stdout, stderr = run_main(str(config))
    assert code == 2
    assert stderr.startswith(f"zodbshootout: error: refusing to read the configuration {config}:")
    result = tmp_path / "huge.json"
    with open(result, "wb") as file:
        file.truncate(inputs.MAX_RESULT_BYTES + 1)
    code, _stdout, stderr = run_main("show", str(result))
    assert code == 2
    assert "refusing to read result file" in stderr


def test_an_included_device_is_refused_with_file_and_line(tmp_path, zero_device):
    config = tmp_path / "main.conf"
    config.write_text(f"# databases\n%include {zero_device}\n")
    code, _stdout, stderr = run_main(str(config))
    assert code == 2
    assert stderr == (
        f"zodbshootout: error: {config}:2: refusing to read the included file {zero_device}: "
        "it is a character device, not a regular file\n"
    )


def _defined_include(tmp_path, target: str) -> str:
    """A configuration that names *target* only through a %define (ZConfig substitutes it)."""
    config = tmp_path / "main.conf"
    directory, name = os.path.split(target)
    config.write_text(f"%define where {directory}\n# databases\n%include $where/{name}\n")
    return str(config)


def test_an_include_through_a_define_gets_every_check_a_direct_one_gets(tmp_path, zero_device):
    huge = tmp_path / "huge.conf"
    with open(huge, "wb") as file:
        file.truncate(inputs.MAX_CONFIG_BYTES + 1)
    config = _defined_include(tmp_path, str(huge))
    code, stdout, stderr = run_main(config, "-n", "5")
    assert (code, stdout) == (2, ""), stderr
    assert stderr.startswith(
        f"zodbshootout: error: {config}:3: refusing to read the included file {huge}: 1 MiB is "
    )
    assert stderr.count("\n") == 1
    config = _defined_include(tmp_path, zero_device)
    code, _stdout, stderr = run_main(config, "-n", "5")
    assert stderr == (
        f"zodbshootout: error: {config}:3: refusing to read the included file {zero_device}: "
        "it is a character device, not a regular file\n"
    )
    # A loop through a %define names the include that closes it.
    looping = tmp_path / "loop.conf"
    looping.write_text(f"%define here {tmp_path}\n\n%include $here/loop.conf\n")
    code, _stdout, stderr = run_main(str(looping), "-n", "5")
    assert code == 2
    assert stderr == (
        f"zodbshootout: error: {looping}:3: %include loop: {looping} includes {looping}\n"
    )
