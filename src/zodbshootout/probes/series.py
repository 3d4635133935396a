"""Series on the run's time axis: the client's and the servers' counters, sampled untimed.

A mix run samples, every ``--interval``, two kinds of series:

- the client's, in each worker, when it closes an interval (between two
  transactions, as it already does to send its interval's latencies): its
  pickle cache (objects and estimated bytes), its storage client cache
  (:meth:`~zodbshootout.storages.base.StorageKind.client_cache_series`),
  its resident memory, and how long it waited for a CPU per millisecond it
  ran (``cpu_wait_ratio``, from ``/proc/self/schedstat``: a machine that
  gets busier makes every process wait longer, a slower database doesn't);
- the machine's, in the runner's sampler thread: the share of time some
  task waited for a CPU (``/proc/pressure/cpu``) and the load average;
- the servers', in a sampler thread of the runner's process, each sampler
  on a connection of its own
  (:meth:`~zodbshootout.storages.base.StorageKind.server_samplers`):
  PostgreSQL's and MariaDB's statistics views, ZEO's server status,
  memcached's ``stats``.

A sampler that cannot read (no right, no driver, an old server, a server
that is gone) is dropped at its first failure with one note, and the run
goes on.  Every series keeps at most :data:`CAPACITY` samples
(:class:`SeriesBuffer` halves its resolution when full), so a long run's
memory is bounded.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

__all__ = [
    "CAPACITY",
    "ClientSampler",
    "MachineSampler",
    "SamplerThread",
    "SeriesBuffer",
    "rss_bytes",
]

#: The samples a series keeps at most: a run longer than this many intervals
#: keeps every second sample, then every fourth, and so on.
CAPACITY = 1024

#: A reading: series name -> (unit, value).
Reading = dict[str, tuple[str, float]]


class SeriesBuffer:
    """One series' samples, at most *capacity* of them, evenly thinned when full.

    When the buffer is full, every second sample is dropped and from then on
    only every second offered sample is kept (the stride doubles), so the
    series keeps covering the whole run at a coarser, regular step.
    """

    def __init__(self, unit: str, capacity: int = CAPACITY) -> None:
        if capacity < 2 or capacity % 2:
            raise ValueError("a series keeps an even number of samples, at least two")
        self.unit = unit
        self.capacity = capacity
        self.times: list[float] = []
        self.values: list[float] = []
        self.stride = 1  # keep one offered sample in this many
        self._offered = 0

    def add(self, t: float, value: float) -> None:
        """Offer the sample (*t*, *value*): kept if it falls on the stride.

        The kept samples are those offered at multiples of the stride; a
        halving keeps the even ones of them, multiples of the doubled stride.
        """
        offered = self._offered
        self._offered += 1
        if offered % self.stride:
            return
        if len(self.times) >= self.capacity:
            del self.times[1::2]
            del self.values[1::2]
            self.stride *= 2
            if offered % self.stride:
                return
        self.times.append(t)
        self.values.append(value)

    def as_data(self, origin: float = 0.0, digits: int = 3) -> dict[str, Any]:
        """``{"unit", "t", "values"}``: times in seconds from *origin*, rounded."""
        return {
            "unit": self.unit,
            "t": [round(t - origin, digits) for t in self.times],
            "values": [_plain(value) for value in self.values],
        }


def _plain(value: float) -> float | int:
    """An integral value as an int (counters stay whole in JSON)."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return int(value)
    return round(value, 6)


class SeriesSet:
    """Buffers by series name, created on first sight of a name."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.buffers: dict[str, SeriesBuffer] = {}

    def add(self, t: float, reading: Reading, prefix: str = "") -> None:
        for name, (unit, value) in reading.items():
            key = prefix + name
            buffer = self.buffers.get(key)
            if buffer is None:
                buffer = self.buffers[key] = SeriesBuffer(unit, self.capacity)
            buffer.add(t, value)

    def as_data(self, origin: float = 0.0, since: float | None = None) -> dict[str, Any]:
        """Every series as plain data; with *since*, samples before it dropped but the last."""
        data = {}
        for name, buffer in self.buffers.items():
            entry = buffer.as_data(origin)
            if since is not None:
                entry = trimmed(entry, since - origin)
            data[name] = entry
        return data


def trimmed(series: dict[str, Any], since: float) -> dict[str, Any]:
    """*series* without its samples before *since*, except the last of them (a baseline)."""
    times, values = series["t"], series["values"]
    first = 0
    while first + 1 < len(times) and times[first + 1] <= since:
        first += 1
    return {**series, "t": times[first:], "values": values[first:]}


# --- The client's series, read in a worker between transactions -------------


_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


try:  # looked for once: a failed import is not cached, and searches sys.path again
    import psutil
except ImportError:
    psutil = None


def rss_bytes() -> int | None:
    """This process's resident memory: psutil's figure if installed, else /proc/self/statm."""
    if psutil is not None:
        return int(psutil.Process().memory_info().rss)
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


class _Kind(Protocol):
    def client_cache_series(self, storage: Any) -> Reading: ...


class ClientSampler:
    """A worker's client series: its pickle cache, storage client cache and memory.

    *db* is the worker's ZODB DB (with threads, the one they share: its
    pickle cache is every thread's); *kind* its storage's kind.  A part
    that fails to read is left out from then on, with one note.
    """

    def __init__(
        self, db: Any, kind: _Kind, extra: tuple[str, Callable[[], Reading]] | None = None
    ) -> None:
        self.db = db
        self.kind = kind
        self.notes: list[str] = []
        self.series = SeriesSet()
        #: The CPU seconds this worker's thread spent sampling (its cost, in the result).
        self.seconds = 0.0
        self._cpu = CpuWait()
        self._parts: list[tuple[str, Callable[[], Reading]]] = [
            ("the pickle cache", self._pickle_cache),
            ("the storage's client cache", lambda: kind.client_cache_series(db.storage)),
            ("the resident memory", self._memory),
            ("the CPU wait", self._cpu.read),
        ]
        if extra is not None:  # the mode's own counts (mix: the loads, for the warm-up curve)
            self._parts.append(extra)

    def sample(self, t: float) -> None:
        """Read every part now into the series, at *t* seconds on the run's time axis."""
        began = time.thread_time()
        self.series.add(t, self.read())
        self.seconds += time.thread_time() - began

    def read(self) -> Reading:
        reading: Reading = {}
        for part in list(self._parts):
            label, read = part
            try:
                reading.update(read())
            except Exception as e:
                self._parts.remove(part)
                self.notes.append(f"{label} was not sampled: {type(e).__name__}: {e}")
        return reading

    def _pickle_cache(self) -> Reading:
        objects = [0]
        estimated = [0]

        def add(connection: Any) -> None:
            cache = connection._cache
            objects[0] += cache.cache_non_ghost_count
            estimated[0] += cache.total_estimated_size

        self.db._connectionMap(add)
        return {
            "pickle_cache_objects": ("objects", objects[0]),
            "pickle_cache_bytes": ("bytes", estimated[0]),
        }

    def _memory(self) -> Reading:
        rss = rss_bytes()
        if rss is None:
            raise OSError("neither psutil nor /proc/self/statm")
        return {"rss": ("bytes", rss)}


class CpuWait:
    """Milliseconds this thread waited, runnable, for a CPU per millisecond it ran.

    ``/proc/thread-self/schedstat`` holds the thread's run time and its time
    waiting on a run queue (nanoseconds); the ratio of their increases since
    the last reading is how crowded the machine was for this worker.
    """

    PATH = "/proc/thread-self/schedstat"

    def __init__(self) -> None:
        self._last: tuple[int, int] | None = None

    def read(self) -> Reading:
        with open(self.PATH, "rb") as schedstat:
            ran, waited = (int(field) for field in schedstat.read().split()[:2])
        last, self._last = self._last, (ran, waited)
        if last is None:
            return {}  # the baseline: a ratio needs two readings
        ran_more = ran - last[0]
        ratio = (waited - last[1]) / ran_more if ran_more > 0 else 0.0
        return {"cpu_wait_ratio": ("ms/ms", round(ratio, 4))}


class MachineSampler:
    """The machine's CPU: the share of time some task waited for one, the load average.

    ``/proc/pressure/cpu`` (PSI, Linux 4.20+) ``some total`` counts the
    microseconds during which at least one task was runnable and not
    running; its increase over the wall-clock time between two readings is
    a share from 0 to 1.  Where PSI is missing only the load average is read.
    """

    name = "machine"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: tuple[float, int] | None = None

    def read(self) -> Reading:
        with open("/proc/loadavg", "rb") as loadavg:
            load = float(loadavg.read().split()[0])
        reading: Reading = {"load_1min": ("tasks", load)}
        total = _pressure_total()
        if total is not None:
            now = self.clock()
            last, self._last = self._last, (now, total)
            if last is not None and now > last[0]:
                share = (total - last[1]) / 1e6 / (now - last[0])
                reading["cpu_pressure"] = ("share", round(min(max(share, 0.0), 1.0), 4))
        return reading

    def close(self) -> None:
        pass


def _pressure_total() -> int | None:
    try:
        with open("/proc/pressure/cpu", "rb") as pressure:
            first = pressure.readline().split()
    except OSError:
        return None
    for field in first:
        if field.startswith(b"total="):
            return int(field[6:])
    return None


# --- The servers' series, read in a thread of the runner's process -----------


class Sampler(Protocol):
    """A server's statistics, read on a connection of the sampler's own."""

    @property
    def name(self) -> str: ...

    def read(self) -> Reading: ...

    def close(self) -> None: ...


class SamplerThread:
    """Every *interval_seconds*, each sampler read into its series (wall-clock times).

    Started before the workers, stopped after them: ``stop`` takes a last
    sample.  A sampler that fails is closed and dropped with one note
    (:attr:`notes`); a failing ``close`` is ignored.
    """

    def __init__(
        self,
        samplers: Sequence[Sampler],
        interval_seconds: float,
        clock: Callable[[], float] = time.time,
        capacity: int = CAPACITY,
    ) -> None:
        self.samplers = list(samplers)
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.series = SeriesSet(capacity)
        self.notes: list[str] = []
        #: The CPU seconds the thread used (time.thread_time), for the cost benchmark.
        self.cpu_seconds = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="series-sampler", daemon=True)

    def start(self) -> SamplerThread:
        if self.samplers:
            self._thread.start()
        return self

    def _loop(self) -> None:
        started = time.thread_time()
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                self.sample()
                next_at += self.interval_seconds
                self._stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            self.cpu_seconds = time.thread_time() - started

    def sample(self) -> None:
        """Read every sampler once (from the thread, and once more at the stop)."""
        with self._lock:
            for sampler in list(self.samplers):
                try:
                    reading = sampler.read()
                    at = self.clock()
                except Exception as e:
                    self._drop(sampler, e)
                    continue
                self.series.add(at, reading, prefix=f"{sampler.name}.")
            self.samples += 1

    def _drop(self, sampler: Sampler, error: Exception) -> None:
        self.samplers.remove(sampler)
        self.notes.append(
            f"{sampler.name} series not sampled: {type(error).__name__}: {_first_line(error)}"
        )
        try:
            sampler.close()
        except Exception:
            pass

    def stop(self) -> None:
        """Stop the thread, take a last sample, close the samplers."""
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(max(5.0, 3 * self.interval_seconds))
        if self.samplers:
            began = time.thread_time()
            self.sample()
            self.cpu_seconds += time.thread_time() - began
        for sampler in self.samplers:
            try:
                sampler.close()
            except Exception:
                pass


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else ""


def open_samplers(
    makers: Iterable[tuple[str, Callable[[], Sequence[Sampler]]]],
) -> tuple[list[Sampler], list[str]]:
    """The samplers each maker opens, and one note per maker that could not open its own."""
    samplers: list[Sampler] = []
    notes: list[str] = []
    for label, make in makers:
        try:
            samplers.extend(make())
        except Exception as e:
            notes.append(f"{label} series not sampled: {type(e).__name__}: {_first_line(e)}")
    return samplers, notes
