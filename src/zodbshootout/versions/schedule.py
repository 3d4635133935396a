"""The order of the variants in each round: interleaved, so drift hits them all alike.

A machine warms up, throttles, and has neighbours that come and go; measured
one after the other (AAAA then BBBB), a variant would take the blame for
whatever changed in between.  Rounds interleave them (AB, BA, AB, ...), as
asv's ``--interleave-processes`` does: ``alternate`` runs them in the given
order, then reversed, so each is first as often as last (over an even
number of rounds); ``shuffle`` draws each round's order at random from a
recorded seed, as Google Benchmark's random interleaving does.
"""

from __future__ import annotations

import random

#: --order's choices.
ORDERS = ("alternate", "shuffle")


def round_orders(
    variant_count: int, rounds: int, order: str = "alternate", seed: int | None = None
) -> list[list[int]]:
    """Each round's variants (their indexes), in the order they run."""
    forward = list(range(variant_count))
    if order == "shuffle":
        chooser = random.Random(seed)
        return [chooser.sample(forward, variant_count) for _ in range(rounds)]
    if order != "alternate":
        raise ValueError(f"unknown order {order!r}")
    return [forward if number % 2 == 0 else forward[::-1] for number in range(rounds)]
