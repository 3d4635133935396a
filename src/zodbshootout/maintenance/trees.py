"""The fill's container classes: LOBTrees of a chosen fan-out, importable by name.

A fill with ``--fanout F`` keeps its objects in a ``FanoutTree<F>``, an
LOBTree whose buckets and internal nodes split above F entries (BTrees reads
``max_leaf_size`` and ``max_internal_size`` from the class).  The database
stores the class by module and name, so any process must find it again:
this module makes each one on first use (PEP 562 ``__getattr__``), for any F.
"""

from __future__ import annotations

from typing import Any

from BTrees.LOBTree import LOBTree

PREFIX = "FanoutTree"
#: The smallest fan-out BTrees accepts for its nodes.
MIN_FANOUT = 2
#: Larger nodes only make every change rewrite more of one record.
MAX_FANOUT = 100_000

_made: dict[int, type] = {}


def tree_class(fanout: int) -> type:
    """The LOBTree class whose nodes hold at most *fanout* entries (0: LOBTree's own)."""
    if fanout == 0:
        return LOBTree
    if not MIN_FANOUT <= fanout <= MAX_FANOUT:
        raise ValueError(f"fan-out {fanout} is not within {MIN_FANOUT}..{MAX_FANOUT}")
    if fanout not in _made:
        made = type(
            f"{PREFIX}{fanout}",
            (LOBTree,),
            {"max_leaf_size": fanout, "max_internal_size": fanout, "__module__": __name__},
        )
        _made[fanout] = made
    return _made[fanout]


def __getattr__(name: str) -> Any:
    # What unpickling a fill's tree asks for: FanoutTree64, made on demand.
    digits = name[len(PREFIX) :]
    if name.startswith(PREFIX) and digits.isdigit() and int(digits) >= MIN_FANOUT:
        return tree_class(int(digits))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
