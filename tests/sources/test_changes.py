"""Unit tests of change detection: what a run loads and retires, and the mass-delete share."""

from __future__ import annotations

import pyarrow as pa
import pytest

from drone_ops_sync.sources.drone_ops.compare.changes import ChangeSet, Walked, diff, held_hashes
from drone_ops_sync.sources.drone_ops.compare.deletions import (
    outside_projects,
    retire_share_exceeded,
)
from drone_ops_sync.sources.drone_ops.walk.rolling import job_slice_of


def is_empty(changes: ChangeSet) -> bool:
    """Nothing to load: no new or changed version and nothing to retire."""
    return changes.new == 0 and changes.changed == 0 and not changes.retire_ids


def _seen(pairs: dict[str, str], current: pa.Table | None = None) -> Walked:
    """The walk's ids with the first look's decision: held when `current` holds the hash."""
    held = held_hashes(current) if current is not None else frozenset()
    return Walked(
        pa.array(list(pairs), pa.string()),
        pa.array([version in held for version in pairs.values()], pa.bool_()),
    )


def _current(pairs: dict[str, str]) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(pairs), pa.string()), "_row_hash": pa.array(list(pairs.values()))}
    )


def _changes(retire: int, current: int) -> ChangeSet:
    return ChangeSet(pa.array([], pa.string()), 0, 0, [f"x{i}" for i in range(retire)], current)


@pytest.mark.parametrize("current", [None, _current({})], ids=["no-table", "empty-table"])
def test_first_run_loads_everything_as_new(current: pa.Table | None) -> None:
    """With nothing current, every walked entity is new and nothing is retired."""
    changes = diff(_seen({"a": "ha", "b": "hb"}, current), current)
    assert changes.load_ids.to_pylist() == ["a", "b"]
    assert (changes.new, changes.changed, changes.retired, changes.current) == (2, 0, 0, 0)
    assert not is_empty(changes)


def test_unchanged_snapshot_yields_nothing() -> None:
    """Same ids with the same hashes (in any order): nothing to load or retire."""
    current = _current({"a": "ha", "b": "hb"})
    changes = diff(_seen({"b": "hb", "a": "ha"}, current), current)
    assert changes.load_ids.to_pylist() == []
    assert (changes.new, changes.changed, changes.retired) == (0, 0, 0)
    assert changes.current == 2
    assert is_empty(changes)


def test_changed_new_and_retired_mix() -> None:
    """A changed hash is a change, an unknown id is new, a missing id is retired."""
    current = _current({"a": "ha", "b": "hb", "c": "hc"})
    changes = diff(_seen({"a": "ha", "b": "hb2", "d": "hd"}, current), current)
    assert sorted(changes.load_ids.to_pylist()) == ["b", "d"]
    assert (changes.new, changes.changed) == (1, 1)
    assert changes.retire_ids == ["c"]
    assert changes.retired == 1
    assert changes.current == 3
    assert not is_empty(changes)


def test_everything_gone_retires_all() -> None:
    """An empty walk against current rows retires every one of them."""
    changes = diff(_seen({}), _current({"a": "h"}))
    assert changes.retire_ids == ["a"]
    assert (changes.new, changes.changed, changes.current) == (0, 0, 1)


def test_retire_only_is_not_empty() -> None:
    """A run that only retires still has work to do."""
    current = _current({"a": "ha", "b": "hb"})
    changes = diff(_seen({"a": "ha"}, current), current)
    assert changes.load_ids.to_pylist() == []
    assert changes.retire_ids == ["b"]
    assert not is_empty(changes)


@pytest.mark.parametrize(
    ("retire", "current", "share", "exceeded"),
    [
        (5, 10, 0.5, False),  # exactly 50% is allowed
        (6, 10, 0.5, True),  # above is refused
        (1, 2, 0.5, False),
        (2, 3, 0.5, True),
        (10, 10, 1.0, False),  # share 1.0 allows retiring everything
        (1, 10, 0.05, True),
        (0, 10, 0.01, False),  # nothing retired: never exceeded
    ],
)
def test_retire_share_boundaries(retire: int, current: int, share: float, exceeded: bool) -> None:
    """`retire_share_exceeded` is a strict "more than" comparison of retired / current."""
    assert retire_share_exceeded(_changes(retire, current), share) is exceeded


def test_retire_share_with_no_current_rows_is_never_exceeded() -> None:
    """With an empty warehouse table nothing can be over-retired (and no division by zero)."""
    assert retire_share_exceeded(_changes(0, 0), 0.5) is False
    assert retire_share_exceeded(_changes(3, 0), 0.5) is False


def test_retire_share_from_diff() -> None:
    """End to end through `diff`: 3 of 4 current rows gone exceeds 50%, 2 of 4 does not."""
    current = _current({"a": "1", "b": "2", "c": "3", "d": "4"})
    assert retire_share_exceeded(diff(_seen({"a": "1"}, current), current), 0.5)
    assert not retire_share_exceeded(diff(_seen({"a": "1", "b": "2"}, current), current), 0.5)


def test_job_slices_are_stable_and_cover_every_project_once() -> None:
    ids = [f"proj_{n:05d}" for n in range(4_000)]
    slices = [job_slice_of(i, 8) for i in ids]
    assert slices == [job_slice_of(i, 8) for i in ids], "the same id always lands in one slice"
    counts = [slices.count(s) for s in range(8)]
    assert all(400 <= count <= 600 for count in counts), counts
    assert job_slice_of("proj_00001", 1) == 0


def test_outside_projects_keeps_only_walked_and_vanished_projects_jobs() -> None:
    current = pa.table(
        {
            "id": ["j1", "j2", "j3", "j4"],
            "_row_hash": ["a", "b", "c", "d"],
            "project_id": ["walked", "skipped", "deleted", None],
        }
    )
    kept = outside_projects(current, {"skipped"})
    assert kept.column("id").to_pylist() == ["j1", "j3", "j4"]
    assert outside_projects(current, set()) is current
    # a skipped project's unchanged jobs are out of scope: the diff neither loads nor retires them
    changes = diff(_seen({"j1": "a"}, current), kept)
    assert changes.retire_ids == ["j3", "j4"] and changes.current == 3
