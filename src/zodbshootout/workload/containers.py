"""The shape of the measured data: which container holds each worker's objects.

By default each worker's N objects live in a ``PersistentMapping``: one
persistent object that holds all N references, so every read first loads
that one record.  ``--btrees`` puts them in a BTree instead, as large
applications do: the references are spread over buckets (about 60 per bucket
for ``IO``, 30 for ``OO``), each its own record, so reads also load buckets
and a write rewrites only the buckets that changed.  Keys are the object
numbers 0..N-1 in both kinds.
"""

from __future__ import annotations

from typing import Any

from BTrees.IOBTree import IOBTree
from BTrees.OOBTree import OOBTree
from persistent.mapping import PersistentMapping

#: --btrees values: integer keys (IOBTree) or object keys (OOBTree).
CONTAINER_KINDS = ("IO", "OO")
#: What --btrees means without a value.
DEFAULT_BTREE_KIND = "IO"

_FACTORIES: dict[str | None, Any] = {
    None: PersistentMapping,
    "IO": IOBTree,
    "OO": OOBTree,
}


def container_factory(btrees: str | None) -> Any:
    """The class of each worker's container for a --btrees value (None: PersistentMapping)."""
    try:
        return _FACTORIES[btrees]
    except KeyError:
        raise ValueError(f"--btrees takes {' or '.join(CONTAINER_KINDS)}, not {btrees!r}") from None


def describe_container(btrees: str | None) -> str:
    """The container as RunResult.metadata records it, e.g. ``IOBTree``."""
    return str(container_factory(btrees).__name__)
