"""A maintain run's log-log chart: its points, and a file drawn from synthetic sizes."""

from __future__ import annotations

from zodbshootout.render.maintenance_plot import plot_maintenance, points_by_operation
from zodbshootout.results.maintenance import MaintenanceRun, OperationRecord, scaling_fits


def _run() -> MaintenanceRun:
    records = [
        OperationRecord(database, "pack", n, seconds=factor * n**1.1)
        for database, factor in (("fs", 1e-6), ("sqlite", 3e-6))
        for n in (100_000, 10_000, 1_000)
    ]
    records.append(OperationRecord("fs", "reindex", 1000, reason="not applicable"))
    return MaintenanceRun(records, scaling_fits(records), [], [])


def test_the_points_are_each_database_and_operation_in_size_order():
    points = points_by_operation(_run())
    assert list(points) == ["pack"]  # nothing measured of reindex
    assert [n for n, _ in points["pack"]["fs"]] == [1_000, 10_000, 100_000]


def test_the_chart_is_drawn(tmp_path):
    path = tmp_path / "maintain.png"
    plot_maintenance(_run(), str(path))
    assert path.read_bytes()[:4] == b"\x89PNG"
