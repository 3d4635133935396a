"""The fill's shape (which objects are garbage), its trees' classes, and the disk check."""

from __future__ import annotations

import pickle

import pytest

from zodbshootout.maintenance import trees
from zodbshootout.maintenance.disk import check_room, estimated_bytes
from zodbshootout.maintenance.fill import FillShape


@pytest.mark.parametrize("share", [0.0, 0.2, 0.25, 1 / 3, 0.999])
def test_exactly_the_share_of_any_prefix_is_garbage(share):
    shape = FillShape(garbage_share=share)
    for objects in (1, 7, 10, 999, 10_000):
        marked = sum(shape.is_garbage(i) for i in range(objects))
        assert marked == shape.garbage_among(objects) == int(objects * shape.garbage_fraction)


def test_the_share_is_the_decimal_written():
    assert FillShape(garbage_share=0.2).garbage_among(10_000) == 2000  # not 1999


def test_a_fanout_tree_splits_its_buckets_and_unpickles_by_name():
    tree_class = trees.tree_class(8)
    assert tree_class is trees.FanoutTree8
    tree = tree_class()
    for key in range(100):
        tree[key] = key
    assert len(tree._firstbucket.keys()) <= 8
    assert pickle.loads(pickle.dumps(tree_class)) is tree_class
    assert trees.tree_class(0).__name__ == "LOBTree"
    with pytest.raises(AttributeError):
        trees.FanoutTree1  # noqa: B018


def test_a_disk_too_small_is_named_with_the_figures(tmp_path):
    shape = FillShape(revisions=2, object_size_bytes=100)
    paths = {"a": [str(tmp_path / "a.fs")], "b": [str(tmp_path / "b" / "dir")], "pg": []}
    shortfall, unchecked = check_room(paths, 10**13, shape)
    assert unchecked == ["pg"]
    assert shortfall is not None
    assert shortfall.databases == ("a", "b")  # one disk: they add up
    assert shortfall.needed_bytes == 2 * estimated_bytes(10**13, shape)
    message = shortfall.message(10**13, shape)
    assert "need about" in message
    assert str(tmp_path) in message
    assert check_room(paths, 10, shape)[0] is None
