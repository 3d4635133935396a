"""Display labels of the phases: the renderers' business, not the runner's."""

_LABELS = {
    "add": "Add {n} Objects",
    "update": "Update {n} Objects",
    "warm": "Read {n} Warm Objects",
    "cold": "Read {n} Cold Objects",
    "prefetch": "Read {n} Prefetched Cold Objects",
    "hot": "Read {n} Hot Objects",
    "steamin": "Read {n} Steamin' Objects",
    # Connections per second; n only tells the row's object count apart.
    "open": "Open Connection (n={n})",
    # The extra benchmarks (zodbshootout.phases.benchmarks): N operations per worker.
    "new_oid": "Allocate {n} OIDs",
    "store": "Store {n} Raw Objects",
    "tpc": "{n} Empty Two-Phase Commits",
    "commit": "{n} Empty Transaction Commits",
    "readcurrent": "ReadCurrent {n} Objects",
    "conflicts": "Update {n} Shared Objects",
    "readcurrent_conflicts": "ReadCurrent/Update {n} Shared Objects",
}


#: The phases whose notes say how many conflicts were retried: those whose
#: record has ``counts_conflicts`` (a unit test holds the two equal; render/
#: reads no phase records, so that ``show`` loads no ZODB).
COUNTS_CONFLICTS = frozenset({"conflicts", "readcurrent_conflicts"})


def phase_label(phase: str, object_count: int) -> str:
    """The row label of a phase, e.g. ``Read 1000 Steamin' Objects``."""
    return _LABELS.get(phase, phase.capitalize() + " {n}").format(n=object_count)
