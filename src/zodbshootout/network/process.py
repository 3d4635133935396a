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
import shlex
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from zodbshootout.children import PipedChild
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


class ProxyProcess(PipedChild):
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
        super().__init__(command or proxy_command())
        self._listening: list[Address] | None = None
        request: dict[str, Any] = {"targets": self.targets, **_step_message(step)}
        if ports:
            request["ports"] = [int(port) for port in ports]
        self._send(request)

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
        line = self.read_line(timeout_seconds)
        answer: dict[str, Any] = json.loads(line) if line else {}
        if line and "error" not in answer:
            return answer
        if line is not None:
            reason = answer.get("error") or self.last_stderr_line() or "it exited"
        elif self._process.poll() is not None:
            reason = self.last_stderr_line() or f"exit code {self._process.returncode}"
        else:
            reason = f"no answer within {timeout_seconds:g} s"
        self.stop()
        raise CellError(f"the delaying proxy did not {doing}: {reason}")

    def stop(self) -> None:
        """Stop the proxy: close its lifeline, then SIGTERM, then SIGKILL, each after a wait."""
        process = self._process
        self.close_input()  # the lifeline
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


def _step_message(step: RttStep) -> dict[str, float]:
    return {"rtt_seconds": step.rtt_seconds, "jitter_seconds": step.jitter_seconds}
