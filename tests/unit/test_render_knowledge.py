"""What render/ knows of the phases and the workload agrees with their owners.

render/ imports neither (so that ``show`` loads no ZODB); these tests keep
its few facts about them from drifting.
"""

from zodbshootout.phases.classic import REGISTRY
from zodbshootout.render import insight, labels
from zodbshootout.workload import indexes


def test_the_conflict_counting_phases_are_those_whose_record_says_so():
    assert {name for name, phase in REGISTRY.items() if phase.counts_conflicts} == (
        labels.COUNTS_CONFLICTS
    )


def test_keys_per_object_agree_with_the_index_writer():
    for entries in (0, 1, 5):
        assert insight.keys_per_object(entries) == indexes.keys_per_object(entries)
