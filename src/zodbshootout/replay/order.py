"""The recorded order of what one connection can see of another's: polls and commits.

What a transaction reads depends on which commits its poll sees; whether a
commit conflicts depends on which commits went before it.  Replayed in any
other order, a connection may write over an object another one changed since
it read it (the replay must read it again: a load the recording never made),
and a commit may conflict where the recorded one didn't.  An ordered replay
(the default; ``--free-order`` turns it off) keeps the recorded order of
these *boundary events* across its workers:

- each commit, from ``tpc_begin`` to ``tpc_finish`` (or ``tpc_abort``), is
  one event; commits keep the order of their recorded ``tpc_finish`` calls
  (every storage here serializes commits with a lock, so that is the order
  they took it in);
- each transaction's start (its poll) goes between the commits it saw and
  those it didn't.  A poll's recorded time can't tell that alone: a poll
  that overlapped a commit's ``tpc_finish`` may have seen it or not.  The
  recorder noted how many objects each poll said changed; the poll is placed
  after the number of commits, nearest to what its time says, whose objects
  (other connections', since its last poll) are that many.  A poll that no
  place explains (a trace with rotated-away files) is placed by its time.

Before an event, a worker waits for its turn (:data:`~.plan.TURN`, a
semaphore of its own) unless the event before was its own; after it, it
hands the turn to the worker of the next event (:data:`~.plan.PASS`).
Loads, prefetches and stores run between events, concurrently.  A worker
that replays several recorded connections (``-c`` below their number) runs
their transactions in pieces where the order needs it: a transaction whose
commit comes after another of its connections' polls is replayed as two
pieces, its start and its commit.  A worker never waits for itself, and the
worker of the first unfinished event never waits for anybody: the replay
can't deadlock.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from zodbshootout.replay import plan as p

#: A piece of a transaction, as a worker replays it: [start ns, slot, kind, calls, part].
Entry = list[Any]

#: How many commits away from where its time puts it a poll is looked for.
SEARCH_COMMITS = 32


@dataclass
class _Commits:
    """The plan's commits in recorded order: where each is, who made it, what it changed."""

    positions: list[int] = field(default_factory=list)
    streams: list[int] = field(default_factory=list)
    changed: list[frozenset[int]] = field(default_factory=list)
    #: (stream, transaction number) -> the commit's index.
    index: dict[tuple[int, int], int] = field(default_factory=dict)


def _commits(plan: p.ReplayPlan) -> _Commits:
    found = []
    for stream, each in enumerate(plan.streams):
        for number, transaction in enumerate(each.transactions):
            calls = transaction.calls
            if any(call[0] == p.BEGIN for call in calls):
                done = any(code == p.FINISH and not raised for code, _o, _s, raised in calls)
                stores = (p.STORE, p.CREATE)
                changed = frozenset(c[1] for c in calls if c[0] in stores) if done else frozenset()
                found.append((transaction.commit_position_ns, stream, number, changed))
    found.sort(key=lambda commit: commit[:3])
    commits = _Commits()
    for at, (position, stream, number, changed) in enumerate(found):
        commits.positions.append(position)
        commits.streams.append(stream)
        commits.changed.append(changed)
        commits.index[(stream, number)] = at
    return commits


def _cut(
    commits: _Commits, stream: int, since: int, bounds: tuple[int, int], guess: int, said: int
) -> tuple[int, bool]:
    """How many commits a poll of *stream* saw: within *bounds*, nearest to *guess*, such
    that the objects other connections changed since its last poll (which saw *since*
    commits) are *said* many; and whether one was (else: *guess*)."""
    low, high = bounds
    guess = min(max(guess, low), high)
    if said < 0:
        return guess, True
    first = max(low, guess - SEARCH_COMMITS)
    changed: set[int] = set()
    for at in range(since, first):
        if commits.streams[at] != stream:
            changed |= commits.changed[at]
    sizes = {first: len(changed)}
    for at in range(first, min(high, guess + SEARCH_COMMITS)):
        if commits.streams[at] != stream:
            changed |= commits.changed[at]
        sizes[at + 1] = len(changed)
    fits = [at for at, size in sizes.items() if size == said]
    if not fits:
        return guess, False
    return min(fits, key=lambda at: (abs(at - guess), at)), True


def _next_own(commits: _Commits, stream: int, transactions: int) -> list[int]:
    """Per transaction of *stream*: the index of its own commit or of the stream's next."""
    found = [len(commits.positions)] * (transactions + 1)
    for number in range(transactions - 1, -1, -1):
        found[number] = commits.index.get((stream, number), found[number + 1])
    return found


def sequence(plan: p.ReplayPlan) -> tuple[dict[tuple[int, int, int], int], int]:
    """Each boundary event's place in the recorded order, by (stream, transaction, 0 for
    its start or 1 for its commit); and how many polls were placed by their time alone."""
    commits = _commits(plan)
    keys: list[tuple[int, ...]] = [
        (at, 1, 0, stream, number) for (stream, number), at in commits.index.items()
    ]
    unexplained = 0
    for stream, each in enumerate(plan.streams):
        seen = 0  # the commits the stream's last poll saw
        low = 0  # where its next start may go: after its last start and its own last commit
        high = _next_own(commits, stream, len(each.transactions))
        for number, transaction in enumerate(each.transactions):
            first = transaction.calls[0]
            if first[0] != p.BEGIN:
                guess = bisect.bisect_left(commits.positions, transaction.start_ns)
                said = first[2] if first[0] == p.POLL and not first[3] else -1
                low, explained = _cut(commits, stream, seen, (low, high[number]), guess, said)
                unexplained += not explained
                seen = low if first[0] == p.POLL else seen
                keys.append((low, 0, transaction.start_ns, stream, number))
            own = commits.index.get((stream, number))
            if own is not None:
                low = own + 1
    keys.sort()
    return {(key[3], key[4], key[1]): place for place, key in enumerate(keys)}, unexplained


def _segments(
    transaction: p.Transaction, stream: int, number: int, places: dict[tuple[int, int, int], int]
) -> list[tuple[int, list[p.Call], int, int, bool]]:
    """*transaction*'s start (its calls before tpc_begin) and its commit (the rest): each
    its place in the order, calls, where its turn is handed on, its start ns, and whether
    a commit follows it in another segment."""
    calls = transaction.calls
    begin = next((at for at, call in enumerate(calls) if call[0] == p.BEGIN), len(calls))
    found = []
    if begin:
        place = places[(stream, number, 0)]
        found.append((place, calls[:begin], 1, transaction.start_ns, begin < len(calls)))
    if begin < len(calls):
        rest = calls[begin:]
        end = next(at for at, call in enumerate(rest) if call[0] in (p.FINISH, p.ABORT)) + 1
        place = places[(stream, number, 1)]
        found.append((place, rest, end, transaction.commit_position_ns, False))
    return found


def ordered_entries(plan: p.ReplayPlan, shares: list[list[int]]) -> tuple[list[list[Entry]], int]:
    """Each worker's entries (see :data:`Entry`), its turns taken and handed on; and how
    many polls were placed by their time alone (see :func:`sequence`)."""
    places, unexplained = sequence(plan)
    owners = [0] * len(places)
    segments = []
    for worker, share in enumerate(shares):
        for slot, stream in enumerate(share):
            for number, transaction in enumerate(plan.streams[stream].transactions):
                for segment in _segments(transaction, stream, number, places):
                    owners[segment[0]] = worker
                    segments.append((*segment, worker, slot, number, transaction.kind))
    segments.sort(key=lambda segment: segment[0])
    entries: list[list[Entry]] = [[] for _ in shares]
    heads: dict[tuple[int, int, int], Entry] = {}  # starts whose commit is still to come
    for place, calls, at, start, more, worker, slot, number, kind in segments:
        calls = _turns(calls, at, worker, owners, place)
        mine = entries[worker]
        head = heads.pop((worker, slot, number), None) if not more else None
        if head is not None and mine[-1] is head:
            head[3] = head[3] + calls  # the commit right after its start: one piece
            continue
        if head is not None:
            head[4] = p.HEAD
        mine.append([start, slot, kind, calls, p.WHOLE if head is None else p.REST])
        if more:
            heads[(worker, slot, number)] = mine[-1]
    return entries, unexplained


def _turns(
    calls: list[p.Call], at: int, worker: int, owners: list[int], event: int
) -> list[p.Call]:
    """*calls* with the wait for the worker's turn before, and the turn handed on at *at*."""
    before: list[p.Call] = []
    if event and owners[event - 1] != worker:
        before = [(p.TURN, 0, 0, False)]
    if event + 1 < len(owners) and owners[event + 1] != worker:
        return [*before, *calls[:at], (p.PASS, owners[event + 1], 0, False), *calls[at:]]
    return [*before, *calls] if before else calls
