"""A delaying proxy process, started and stopped by the run that needs it.

:class:`ProxyProcess` starts ``python -m zodbshootout.network.proxy`` for a
list of targets, reads where it listens, changes its delay between steps,
and stops it.  The process's standard input is its lifeline: only this
process holds the pipe's writing end, so when this process ends, however
it ends (SIGKILL included), the proxy reads the end of its input and exits.

On another host (``--hosts``), the same program runs there through ssh
(:func:`proxy_command` with the host): ssh passes the end of its input on,
so the lifeline reaches the remote proxy, which listens on that host's
loopback, where its workers connect.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from zodbshootout.config.hosts import HostSpec
from zodbshootout.errors import CellError
from zodbshootout.network.delays import NO_DELAY, RttStep

Address = tuple[str, int]

START_TIMEOUT_SECONDS = 30.0
ANSWER_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0
PROXY_MODULE = "zodbshootout.network.proxy"


def proxy_command(host: HostSpec | None = None) -> list[str]:
    """The command that runs a proxy on *host* (None or localhost: this machine)."""
    if host is None or host.is_local:
        return [sys.executable, "-m", PROXY_MODULE]
    python = host.python or sys.executable
    # -T: no terminal, so the end of ssh's input reaches the proxy's.  ssh
    # hands the remote shell one command line: quoted here, once.
    remote = shlex.join([python, "-m", PROXY_MODULE])
    return ["ssh", "-T", "-o", "BatchMode=yes", host.name, remote]


class ProxyProcess:
    """A running proxy for *targets*; a context manager, or call stop().

    The constructor does not wait: :attr:`listening` does, so several
    proxies start side by side.  *ports*: where it must listen, one per
    target (none: ports the kernel picks).
    """

    def __init__(
        self,
        targets: Sequence[Address],
        step: RttStep = NO_DELAY,
        command: Sequence[str] | None = None,
        ports: Sequence[int] = (),
    ) -> None:
        self.targets = [(str(host), int(port)) for host, port in targets]
        self.step = step
        # Open for the process's lifetime; closed in stop().
        self._log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115
        env = dict(os.environ)
        # The proxy needs this package importable even when run from a checkout.
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._process = subprocess.Popen(
            list(command or proxy_command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
        )
        self._listening: list[Address] | None = None
        request: dict[str, Any] = {"targets": self.targets, **_step_message(step)}
        if ports:
            request["ports"] = [int(port) for port in ports]
        self._send(request)

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """Its exit code once it has stopped (0: it ended as asked; negative: a signal)."""
        return self._process.poll()

    @property
    def listening(self) -> list[Address]:
        """Where each target is reached, in the targets' order; CellError if it did not start."""
        if self._listening is None:
            answer = self._answer(START_TIMEOUT_SECONDS, "start")
            self._listening = [(str(host), int(port)) for host, port in answer["listening"]]
        return self._listening

    def route(self, target: Address) -> Address:
        """The address that reaches *target* through this proxy."""
        return dict(zip(self.targets, self.listening, strict=True))[target]

    def set_rtt(self, step: RttStep) -> None:
        """Delay the chunks read from now on by *step*; returns once the proxy has it."""
        self.listening  # noqa: B018 -- started first
        self._send(_step_message(step))
        self._answer(ANSWER_TIMEOUT_SECONDS, "change its delay")
        self.step = step

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
        except OSError:
            pass  # it exited: _answer says why

    def _answer(self, timeout_seconds: float, doing: str) -> dict[str, Any]:
        stdout = self._process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([stdout], [], [], 0.2)
            if ready:
                line = stdout.readline()
                answer: dict[str, Any] = json.loads(line) if line else {}
                if "error" not in answer and line:
                    return answer
                reason = answer.get("error") or self._last_stderr_line() or "it exited"
                break
            if self._process.poll() is not None:
                reason = self._last_stderr_line() or f"exit code {self._process.returncode}"
                break
        else:
            reason = f"no answer within {timeout_seconds:g} s"
        self.stop()
        raise CellError(f"the delaying proxy did not {doing}: {reason}")

    def _last_stderr_line(self) -> str:
        if self._log.closed:
            return ""
        self._log.seek(0)
        lines = [ln for ln in self._log.read().decode(errors="replace").splitlines() if ln]
        return lines[-1] if lines else ""

    def close_lifeline(self) -> None:
        """Close the proxy's input, as this process's death would; it then exits by itself."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()

    def stop(self) -> None:
        """Stop the proxy: close its lifeline, then SIGTERM, then SIGKILL, each after a wait."""
        process = self._process
        self.close_lifeline()
        for ask in (None, signal.SIGTERM, signal.SIGKILL):
            if process.poll() is not None:
                break
            if ask is not None:
                process.send_signal(ask)
            try:
                process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                continue
        if process.stdout is not None:
            process.stdout.close()
        self._log.close()

    def __enter__(self) -> ProxyProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _step_message(step: RttStep) -> dict[str, float]:
    return {"rtt_seconds": step.rtt_seconds, "jitter_seconds": step.jitter_seconds}
