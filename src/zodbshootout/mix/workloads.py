"""What a mix run's transactions do: the operations, their weights, the built-in workloads.

A workload is a list of (operation, weight) and the key chooser it models;
each transaction of a worker is one operation drawn by weight.  The built-in
workloads are named after what they model: YCSB's core workloads A–F
(``ycsb-a`` … ``ycsb-f``, with ZODB's operations), a conflict-heavy one (the
"evil" stress test of relstorage#476: readCurrent on objects others change,
on a small set of hot keys) and a polling one (relstorage#159).  ``--mix
read=50,update=50`` is a custom workload without editing code.
"""

from __future__ import annotations

from dataclasses import dataclass

from zodbshootout.errors import UsageError

#: Every operation a transaction can be, in the order tables list them.
READ = "read"  # read K objects
UPDATE = "update"  # change K objects
INSERT = "insert"  # add one new object
SCAN = "scan"  # read L consecutive objects of the tree
RMW = "rmw"  # read K objects, then write each from what was read
READ_CURRENT = "readcurrent"  # readCurrent K objects, update K others (relstorage#476)
POLL = "poll"  # open a connection, poll invalidations, touch the root, close
OPERATIONS = (READ, UPDATE, INSERT, SCAN, RMW, READ_CURRENT, POLL)

#: The operations that commit changes (the others only read).
WRITES = frozenset({UPDATE, INSERT, RMW, READ_CURRENT})

#: Key choosers (see zodbshootout.mix.keys).
UNIFORM = "uniform"
ZIPFIAN = "zipfian"
LATEST = "latest"
HOTSPOT = "hotspot"
KEY_CHOOSERS = (UNIFORM, ZIPFIAN, LATEST, HOTSPOT)


@dataclass(frozen=True)
class Workload:
    """A named mix: operations with their weights (any positive numbers) and a key chooser."""

    name: str
    weights: tuple[tuple[str, float], ...]
    keys: str = ZIPFIAN
    description: str = ""
    #: The hot-spot chooser's (fraction of keys, share of operations).
    hot: tuple[float, float] = (0.2, 0.8)

    @property
    def operations(self) -> tuple[str, ...]:
        """The operations with a weight above zero, in table order."""
        present = {op for op, weight in self.weights if weight > 0}
        return tuple(op for op in OPERATIONS if op in present)

    def shares(self) -> dict[str, float]:
        """Each operation's share of transactions (0..1)."""
        total = sum(weight for _op, weight in self.weights)
        return {op: weight / total for op, weight in self.weights if weight > 0}


def _builtin(
    name: str,
    keys: str,
    description: str,
    hot: tuple[float, float] = (0.2, 0.8),
    **weights: float,
) -> Workload:
    return Workload(name, tuple(weights.items()), keys, description, hot)


BUILTIN: dict[str, Workload] = {
    w.name: w
    for w in (
        _builtin("ycsb-a", ZIPFIAN, "update heavy: a session store", read=50, update=50),
        _builtin("ycsb-b", ZIPFIAN, "read mostly: photo tagging", read=95, update=5),
        _builtin("ycsb-c", ZIPFIAN, "read only: a user profile cache", read=100),
        _builtin("ycsb-d", LATEST, "read latest: status updates", read=95, insert=5),
        _builtin("ycsb-e", ZIPFIAN, "short ranges: threaded conversations", scan=95, insert=5),
        _builtin("ycsb-f", ZIPFIAN, "read-modify-write: user database", read=50, rmw=50),
        _builtin(
            "conflicts",
            HOTSPOT,
            "conflict heavy: readCurrent on objects others change (relstorage#476)",
            # 0.1 % of the keys (at least one) get 90 % of the operations.
            hot=(0.001, 0.9),
            update=40,
            readcurrent=40,
            rmw=20,
        ),
        _builtin(
            "polling",
            ZIPFIAN,
            "invalidation polling while others commit (relstorage#159)",
            poll=50,
            update=50,
        ),
    )
}

#: The largest weight of an operation in --mix: weights are relative, so a
#: million to one is as skewed as a mix gets; beyond, their sum could overflow.
MAX_WEIGHT = 1_000_000

#: The workload of ``zodbshootout mix CONFIG`` without --workload or --mix.
DEFAULT_WORKLOAD = "ycsb-b"


def parse_mix(text: str, keys: str = ZIPFIAN) -> Workload:
    """``read=50,update=50`` as a custom workload; a UsageError says what is wrong."""
    weights: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.strip().partition("=")
        name = name.strip().lower()
        if not sep or name not in OPERATIONS:
            raise UsageError(
                f"--mix: {item.strip()!r} is not OPERATION=WEIGHT with an operation of "
                f"{', '.join(OPERATIONS)}"
            )
        try:
            weight = float(value)
        except ValueError:
            raise UsageError(f"--mix: weight {value.strip()!r} of {name} is not a number") from None
        if not 0 <= weight <= MAX_WEIGHT:  # NaN fails too
            raise UsageError(
                f"--mix: weight {value.strip()[:40]!r} of {name} is not a number from 0 to "
                f"{MAX_WEIGHT:,}"
            )
        weights[name] = weights.get(name, 0.0) + weight
    if not any(weight > 0 for weight in weights.values()):
        raise UsageError("--mix: at least one operation needs a weight above zero")
    spec = ",".join(f"{op}={weights[op]:g}" for op in OPERATIONS if weights.get(op))
    return Workload(f"custom({spec})", tuple(weights.items()), keys, "custom mix (--mix)")


def transaction_objects(workload: Workload, keys_per_operation: int, scan_length: int) -> int:
    """The most objects one transaction of *workload* touches (K, 2K for readcurrent, L)."""
    touched = {
        READ: keys_per_operation,
        UPDATE: keys_per_operation,
        RMW: keys_per_operation,
        READ_CURRENT: 2 * keys_per_operation,
        SCAN: scan_length,
        INSERT: 1,
        POLL: 0,
    }
    return max((touched[op] for op in workload.operations), default=0)


def checked_mix(text: str) -> str:
    """*text* if it is a valid ``--mix`` (see :func:`parse_mix`), checked as it is read."""
    parse_mix(text)
    return text


def choose_workload(name: str | None, mix: str | None, keys: str | None) -> Workload:
    """The workload of --workload NAME or --mix SPEC, with --keys overriding its chooser."""
    if name and mix:
        raise UsageError("--workload and --mix are exclusive: a custom mix is its own workload")
    if keys is not None and keys not in KEY_CHOOSERS:
        raise UsageError(f"--keys must be one of {', '.join(KEY_CHOOSERS)}")
    if mix is not None:  # an empty --mix is refused, not the default workload
        return parse_mix(mix, keys or ZIPFIAN)
    chosen = name or DEFAULT_WORKLOAD
    if chosen not in BUILTIN:
        raise UsageError(f"unknown workload {chosen!r}; choose one of {', '.join(BUILTIN)}")
    workload = BUILTIN[chosen]
    if keys is None:
        return workload
    return Workload(workload.name, workload.weights, keys, workload.description, workload.hot)
