"""concurrency.task.ProgressFollower: every message a stage's workers put is handed on."""

from __future__ import annotations

import queue
import time

from zodbshootout.concurrency.task import ProgressFollower


def test_messages_still_queued_when_the_stage_ends_are_handed_on_before_it_stops():
    """The workers put their last interval just before they reply; on a busy machine
    the follower had not read it when the stage ended, and stopping dropped it (the
    progress line of a mix run's last second, and its checkpoint)."""
    channel: queue.Queue = queue.Queue()
    for index in range(100):
        channel.put(index)
    seen: list[int] = []

    def listener(message: int) -> None:  # merging and printing take a while
        time.sleep(0.002)
        seen.append(message)

    follower = ProgressFollower(channel, listener)
    follower.stop()  # at once, as a stage that ended while these were still queued
    assert seen == list(range(100))
