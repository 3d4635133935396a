"""What ``cachesim`` found: per trace (or group of a run's traces), the traced cache's own
hits and each policy's replay at each cache size.

The records the replays fill in (:mod:`zodbshootout.cachesim.replay`) and every
format renders (:mod:`zodbshootout.render.cachesim`); plain data, no trace
reading and no cache here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HitCount:
    """Loads and how many of them a cache answered."""

    loads: int
    hits: int

    @property
    def hit_rate(self) -> float | None:
        """hits ÷ loads, or None without loads."""
        return self.hits / self.loads if self.loads else None

    def __add__(self, other: HitCount) -> HitCount:
        return HitCount(self.loads + other.loads, self.hits + other.hits)


@dataclass(frozen=True)
class Outcome:
    """One replay: loads, the hits among them, and the replay's wall time."""

    loads: int
    hits: int
    seconds: float

    @property
    def hit_rate(self) -> float | None:
        """hits ÷ loads, or None without loads."""
        return self.hits / self.loads if self.loads else None


@dataclass
class GroupReport:
    """One trace, or one database's stage: the traced cache and a replay per policy and size.

    Filled in file by file as the traces of the group are replayed.
    """

    name: str
    files: list[str]
    format: str  # "zeo" or "spc"
    kind: str | None = None  # the traced storage's kind ("zeo", "relstorage")
    actual: HitCount | None = None
    actual_size_bytes: int | None = None  # the traced cache's size, when it said
    #: phase -> the traced cache's counts inside it (traces with phase markers)
    actual_phases: dict[str, HitCount] = field(default_factory=dict)
    #: (policy, size in bytes) -> the summed outcome over the group's files
    simulated: dict[tuple[str, int], Outcome] = field(default_factory=dict)


@dataclass(frozen=True)
class Simulation:
    """What ``cachesim`` found: the groups, the sizes and policies, the libraries' versions."""

    groups: list[GroupReport]
    sizes_bytes: list[int]
    policies: list[str]
    versions: dict[str, str]  # policy -> the version of the library it replays
    skipped: list[str]  # warnings: files in a directory that were no traces
    #: policy -> the distribution whose version ``versions`` gives ("ZEO", "cachetools").
    packages: dict[str, str] = field(default_factory=dict)
