"""The stages of one database's mix: one, or two with --restart-clients.

With ``--restart-clients`` the workers stop at the restart and new worker
processes (new connections, new caches) run the rest of the duration, with
no warm-up and inserting above every key the first stage used.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from zodbshootout import concurrency
from zodbshootout.errors import CellError
from zodbshootout.mix.worker import MixPlan, MixTask
from zodbshootout.run.ladder import Route


def run_stages(
    session: concurrency.Session,
    name: str,
    route: Route,
    plan: MixPlan,
    options: Any,
    lines: Any,
) -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
    """Each stage's reports (two with --restart-clients), the last host facts.

    *options*: the run's MixOptions; *lines*: its interval lines (mix.runner),
    told when the second stage starts.
    """
    stages = [plan]
    restart = options.restart_at_seconds
    if restart is not None and 0 < restart < plan.duration_seconds:
        stages = [
            replace(plan, duration_seconds=restart),
            replace(plan, duration_seconds=plan.duration_seconds - restart, warmup_seconds=0),
        ]
    stage_reports: list[list[dict[str, Any]]] = []
    host_facts: dict[str, Any] = {}
    for number, stage in enumerate(stages):
        if number:
            stage = replace(stage, insert_base=next_insert_base(stage, stage_reports[-1]))
            lines.say(f"{lines.name}: restarting the workers (new processes, connections, caches)")
            lines.next_stage()
        tasks = worker_tasks(name, route, stage, options)
        wait = stage.warmup_seconds + stage.duration_seconds + options.timeout_seconds
        outcome = session.run_stage(tasks, wait, on_progress=lines.take)
        if outcome.error is not None:
            raise CellError(outcome.error)
        stage_reports.append(list(outcome.timings))
        host_facts = outcome.host_facts or host_facts
        if any(report.get("server_lost") for report in outcome.timings):
            break
    return stage_reports, host_facts


def worker_tasks(name: str, route: Route, plan: MixPlan, options: Any) -> list[MixTask]:
    """One MixTask per worker of *options*, opening *route*."""
    return [
        MixTask(
            route.source,
            name,
            tuple(route.addresses),
            worker,
            options.concurrency,
            plan,
            options.timeout_seconds,
            count_loads=worker == 0 or not options.threads,
        )
        for worker in range(options.concurrency)
    ]


def next_insert_base(plan: MixPlan, reports: list[dict[str, Any]]) -> int:
    """The first key the next stage's inserts may use: above every key the last one used.

    Worker w of c inserted keys base + w + k·c for k below its count
    (``inserted``, warm-up included), all below base + c · max(count).
    """
    most = max((int(report.get("inserted", 0)) for report in reports), default=0)
    return plan.insert_base + len(reports) * most
