"""Run a ZEO server for an ``<embeddedzeo>`` section, and control one (storages.servers
launches them together).

The server is a separate process (``python -m zodbshootout.storages.zeo.server``) so it
has its own interpreter lock, as a real server would.  It listens on
127.0.0.1 with a port the kernel picks, reports that address on its standard
output, and stops on SIGTERM, SIGINT or when its standard input closes — so it
never outlives the run that started it, even if that run is killed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Any

from zodbshootout.children import PipedChild, when_closed
from zodbshootout.config.loader import ConfigSource, parse_source
from zodbshootout.errors import CellError

START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 15.0


@dataclass(frozen=True)
class ServerRequest:
    """What the server process needs: which embedded section of which database."""

    source: ConfigSource
    database: str
    index: int  # position among the database's embedded sections (storages.embedded_zeo_sections)


class ZEOServerProcess(PipedChild):
    """A running embedded ZEO server; use as a context manager or call stop()."""

    def __init__(self, request: ServerRequest) -> None:
        self.request = request
        self._stderr_tail = ""  # kept from the log when stop() closes it
        super().__init__([sys.executable, "-m", "zodbshootout.storages.zeo.server"])
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(_encode(request)).encode() + b"\n")
        self._process.stdin.flush()
        self._address: tuple[str, int] | None = None
        self._asked_to_stop = False
        self._start_error: CellError | None = None

    @property
    def address(self) -> tuple[str, int]:
        """Where the server listens: waits until it reports; CellError if it did not start.

        The constructor does not wait, so several servers start side by side.
        """
        if self._start_error is not None:
            raise self._start_error
        if self._address is None:
            try:
                self._address = self._read_address()
            except CellError as e:
                self._start_error = e
                raise
        return self._address

    def _read_address(self) -> tuple[str, int]:
        line = self.read_line(START_TIMEOUT_SECONDS)
        if line:
            host, port = json.loads(line)
            return host, int(port)
        exited = self._process.poll() is not None
        self.stop()
        reason = self._stderr_tail or (
            f"exit code {self._process.returncode}"
            if exited
            else f"no address within {START_TIMEOUT_SECONDS:.0f} s"
        )
        raise CellError(f"the embedded ZEO server did not start: {reason}")

    def ask_to_stop(self) -> None:
        """Send SIGTERM without waiting (stop() waits), so that servers stop side by side.

        Only once: a second SIGTERM can arrive after the exiting interpreter
        has put back the default handler, and would kill it mid-exit.
        """
        if self._process.poll() is None and not self._asked_to_stop:
            self._asked_to_stop = True
            self._process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after a grace period)."""
        process = self._process
        if process.poll() is None:
            self.ask_to_stop()  # unless already asked
            try:
                process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        if not self._log.closed:
            # Read before closing: stop() may be what ended a failed start.
            self._stderr_tail = self.last_stderr_line()
            self._log.close()


def _encode(request: ServerRequest) -> dict[str, Any]:
    return asdict(request)


def _decode(data: dict[str, Any]) -> ServerRequest:
    return ServerRequest(
        source=ConfigSource(**data["source"]), database=data["database"], index=data["index"]
    )


def serve(request: ServerRequest, report: Any = None) -> None:
    """Open the inner storage and serve it until told to stop (server process side)."""
    from ZEO.StorageServer import StorageServer

    from zodbshootout.storages import embedded_zeo_sections

    config = parse_source(request.source)
    section = embedded_zeo_sections(config.databases[request.database])[request.index]
    storage = section.config.base.open()
    server = StorageServer(("127.0.0.1", 0), {"1": storage})
    stop = threading.Event()

    def shut_down(*_args: object) -> None:
        if not stop.is_set():
            stop.set()
            server.close()

    signal.signal(signal.SIGTERM, shut_down)
    signal.signal(signal.SIGINT, shut_down)

    # Our stdin is the runner's pipe: EOF means the runner is gone.  Stop as
    # SIGTERM would, in the main thread (closing the server from another
    # thread would race the loop for the storage's files).  A signal, not a
    # thread blocked on the pipe: runzeo has one thread, and a second one
    # made the tool's ZEO add and update 0.5 % and 0.7 % slower (16 runs).
    when_closed(sys.stdin.fileno(), shut_down)
    host, port = server.acceptor.addr[:2]
    out = report or sys.stdout
    out.write(json.dumps([host, port]) + "\n")
    out.flush()
    try:
        server.loop()
    finally:
        storage.close()


def main() -> None:
    request = _decode(json.loads(sys.stdin.buffer.readline()))
    try:
        serve(request)
    except Exception as e:
        # One line, the last on stderr: the runner shows it as the reason.
        message = " ".join(str(e).split())
        print(f"{type(e).__name__}: {message}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
