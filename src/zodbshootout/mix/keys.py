"""Which objects a transaction touches: uniform, zipfian, latest and hot-spot key choosers.

Keys are the integers 0..M-1 of the dataset (and, after inserts, above).
Every chooser draws from its own ``random.Random``, seeded from the run's
recorded seed and the worker number, so a run can be repeated key for key.

zipfian
    Rank r (0 = most popular) has probability proportional to 1/(r+1)^0.99,
    YCSB's constant, drawn exactly from the cumulative weights (a bisection,
    not YCSB's approximation, so a test can check the shares).  The ranks are
    *scrambled*: rank r is key (r × A + B) mod M for an A coprime to M, a
    bijection, so the hot keys spread over the whole tree instead of sharing
    its first buckets, and each key keeps its rank's exact share.
latest
    Zipfian over recency: rank 0 is the newest key (after inserts, the newest
    insert this worker knows of).
hotspot
    A fraction of the keys (the first ones, by default 20 %) gets a share of
    the operations (by default 80 %); the rest are uniform over the others.
uniform
    Every key equally likely.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from array import array
from collections.abc import Callable, Sequence
from typing import Any

#: YCSB's zipfian constant.
ZIPFIAN_THETA = 0.99

#: The hot-spot chooser's default: 20 % of keys get 80 % of operations.
DEFAULT_HOT_FRACTION = 0.2
DEFAULT_HOT_SHARE = 0.8

# The scrambling multiplier (a large prime); moved to the next number coprime to M.
_SCRAMBLE_A = 2_654_435_761
_SCRAMBLE_B = 97


def zipfian_cumulative(count: int, theta: float = ZIPFIAN_THETA) -> array:
    """Cumulative weights of ranks 0..count-1 (not normalised; the last is the total)."""
    return array("d", itertools.accumulate(1.0 / (rank + 1) ** theta for rank in range(count)))


def zipfian_top_share(count: int, top: int, theta: float = ZIPFIAN_THETA) -> float:
    """The share of draws the *top* most popular of *count* keys get."""
    cumulative = zipfian_cumulative(count, theta)
    return cumulative[top - 1] / cumulative[-1]


class KeyChooser:
    """Draws keys of a dataset of *count* objects; subclasses say how."""

    def __init__(self, count: int, rng: random.Random) -> None:
        if count < 1:
            raise ValueError("a key chooser needs at least one key")
        self.count = count
        self.rng = rng
        #: Keys inserted beyond the dataset that this chooser may return.
        self.newest = count - 1

    def next(self) -> int:
        """One key."""
        raise NotImplementedError

    def many(self, k: int) -> list[int]:
        """*k* distinct keys (fewer only when the dataset is smaller)."""
        wanted = min(k, self.newest + 1)
        chosen: dict[int, None] = {}
        for _attempt in range(20 * wanted):
            chosen[self.next()] = None
            if len(chosen) == wanted:
                break
        return list(chosen)

    def inserted(self, key: int) -> None:
        """A key this worker (or another) inserted: it may be chosen from now on."""
        self.newest = max(self.newest, key)


class Uniform(KeyChooser):
    def next(self) -> int:
        return self.rng.randrange(self.count)


class Zipfian(KeyChooser):
    def __init__(self, count: int, rng: random.Random, cumulative: Sequence[float]) -> None:
        super().__init__(count, rng)
        self._cumulative = cumulative
        self._total = cumulative[-1]
        multiplier = _SCRAMBLE_A % count or 1
        while math.gcd(multiplier, count) != 1:
            multiplier += 1
        self._multiplier = multiplier

    def rank(self) -> int:
        """A popularity rank (0: the most popular)."""
        return bisect.bisect_right(self._cumulative, self.rng.random() * self._total)

    def key_of_rank(self, rank: int) -> int:
        return (rank * self._multiplier + _SCRAMBLE_B) % self.count

    def next(self) -> int:
        return self.key_of_rank(min(self.rank(), self.count - 1))


class Latest(Zipfian):
    def next(self) -> int:
        # The ranks are over the dataset's size; the newest keys move up with inserts.
        return max(0, self.newest - min(self.rank(), self.count - 1))


class HotSpot(KeyChooser):
    def __init__(
        self,
        count: int,
        rng: random.Random,
        fraction: float = DEFAULT_HOT_FRACTION,
        share: float = DEFAULT_HOT_SHARE,
    ) -> None:
        super().__init__(count, rng)
        self.hot = max(1, min(count, round(count * fraction)))
        self.share = share

    def next(self) -> int:
        if self.hot == self.count or self.rng.random() < self.share:
            return self.rng.randrange(self.hot)
        return self.rng.randrange(self.hot, self.count)


def make_chooser(
    kind: str,
    count: int,
    seed: int,
    worker: int,
    hot: tuple[float, float] = (DEFAULT_HOT_FRACTION, DEFAULT_HOT_SHARE),
    cumulative: Sequence[float] | None = None,
) -> KeyChooser:
    """The chooser *kind* over *count* keys for *worker*, seeded from the run's *seed*."""
    rng = random.Random(seed * 1_000_003 + worker)
    if kind not in _CHOOSERS:
        raise ValueError(f"unknown key chooser {kind!r}")
    return _CHOOSERS[kind](count, rng, hot, cumulative)


def _skewed(chooser: Any) -> Callable[..., KeyChooser]:
    """A builder of a zipfian-skewed *chooser*; the cumulative weights computed if not given."""

    def build(count: int, rng: random.Random, _hot: Any, cumulative: Any) -> KeyChooser:
        if cumulative is None:
            cumulative = zipfian_cumulative(count)
        return chooser(count, rng, cumulative)

    return build


#: Key chooser name -> how to build it from (count, rng, hot, cumulative).
_CHOOSERS: dict[str, Callable[..., KeyChooser]] = {
    "uniform": lambda count, rng, _hot, _cumulative: Uniform(count, rng),
    "hotspot": lambda count, rng, hot, _cumulative: HotSpot(count, rng, *hot),
    "latest": _skewed(Latest),
    "zipfian": _skewed(Zipfian),
}
