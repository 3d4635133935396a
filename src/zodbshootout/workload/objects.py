"""The objects the benchmark writes and reads, and the payloads they carry.

Every payload says which worker, object and write generation it belongs to,
so a read that returns another object's data, or data from before the update,
is caught (see :func:`check_payloads`).
"""

from __future__ import annotations

from collections.abc import Sequence

from persistent import Persistent

from zodbshootout.errors import DataMismatch

#: Generation numbers: what the add phase writes, then what update writes.
ADDED = 0
UPDATED = 1

#: The smallest payload that still identifies its object.
MIN_OBJECT_SIZE_BYTES = 16


class BenchmarkObject(Persistent):
    """One measured object: a persistent object holding a bytes payload."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


def make_payload(worker: int, index: int, generation: int, size_bytes: int) -> bytes:
    """A payload of exactly *size_bytes* that identifies (worker, index, generation)."""
    label = f"{worker}:{index}:{generation};".encode()
    repeats = -(-size_bytes // len(label))
    return (label * repeats)[:size_bytes]


def make_payloads(worker: int, count: int, generation: int, size_bytes: int) -> list[bytes]:
    """The payloads of a worker's *count* objects, built before any timing starts."""
    return [make_payload(worker, index, generation, size_bytes) for index in range(count)]


def check_payloads(
    worker: int, read: Sequence[bytes], generation: int, size_bytes: int, count: int
) -> None:
    """Raise DataMismatch unless *read* is exactly what *generation* wrote."""
    if len(read) != count:
        raise DataMismatch(f"worker {worker} read {len(read)} objects, expected {count}")
    for index, payload in enumerate(read):
        if payload != make_payload(worker, index, generation, size_bytes):
            raise DataMismatch(
                f"worker {worker} read wrong data for object {index}: "
                f"{payload[:24]!r}... is not what the write phase stored"
            )
