"""The one look at change: what the first look decides as the walk offers each page, carried by
the snapshot's batches into `changes.diff`, against the comparison it replaced (every walked
hash compared again with the warehouse's current hashes, doubled ids loaded again).

The reference below is that earlier comparison, written out; the workspace is churned every way
the sync meets: changed, new and deleted jobs, a job listed under two projects (its sightings on
both sides of the first look), ids with two current versions, conflicts settled by records
fetched one by one, and the rolling refresh's narrowed comparison.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from drone_ops_sync.sources.drone_ops.compare.changes import ChangeSet, diff, held_hashes
from drone_ops_sync.sources.drone_ops.compare.deletions import outside_projects
from drone_ops_sync.sources.drone_ops.internal import settings
from drone_ops_sync.sources.drone_ops.tables.breaches import Issue
from drone_ops_sync.sources.drone_ops.tables.entities import JOBS
from drone_ops_sync.sources.drone_ops.tables.rows import row_hash
from drone_ops_sync.sources.drone_ops.walk.spill import TableSnapshot
from tests.sources.fake_api import job

HASH = settings.ROW_HASH_COLUMN
Record = dict[str, Any]


def _current(records: list[Record]) -> pa.Table:
    """The warehouse's current rows of these records, as `known.py` reads them."""
    return pa.table(
        {
            "id": pa.array([r["id"] for r in records], pa.string()),
            HASH: pa.array([row_hash(r) for r in records], pa.string()),
            "project_id": pa.array([r["project_id"] for r in records], pa.string()),
        }
    )


def _by_hash(seen: dict[str, set[str]], current: pa.Table) -> tuple[set[str], int, int, set[str]]:
    """The comparison the first look replaced: one version per id (the smallest hash), loaded
    when the warehouse does not hold that hash or holds two current versions of the id."""
    chosen = {i: min(versions) for i, versions in seen.items()}
    current_ids = set(current.column("id").to_pylist())
    current_hashes = set(current.column(HASH).to_pylist())
    counts = pc.value_counts(current.column("id")).to_pylist()
    doubled = {c["values"] for c in counts if c["counts"] > 1}
    load = {i for i, h in chosen.items() if h not in current_hashes or i in doubled}
    changed = len(load & current_ids)
    return load, len(load) - changed, changed, current_ids - set(chosen)


def _outcome(changes: ChangeSet) -> tuple[set[str], int, int, set[str]]:
    return set(changes.load_ids.to_pylist()), changes.new, changes.changed, set(changes.retire_ids)


def _churned(seed: int) -> tuple[list[Record], dict[str, list[Record]], list[Record]]:
    """(warehouse's records, the API's pages per project now, the warehouse's extra rows)."""
    rng = random.Random(seed)
    before = [job(f"j{n:03d}", f"p{n % 12}", 1_000 + n) for n in range(240)]
    now = {r["id"]: dict(r) for r in before}
    ids = sorted(now)
    rng.shuffle(ids)
    for jid in ids[:30]:
        now[jid]["status"] = "completed"
    for jid in ids[30:45]:
        del now[jid]
    for n in range(20):
        now[f"k{n:03d}"] = job(f"k{n:03d}", f"p{n % 12}", 9_000 + n)
    pages: dict[str, list[Record]] = {}
    for record in now.values():
        pages.setdefault(record["project_id"], []).append(record)
    # one unchanged and one changed job also listed under another project (another version)
    for jid in (ids[50], ids[0]):
        stray = {**now[jid], "project_id": "p99"}
        pages.setdefault("p99", []).append(stray)
    # ids the warehouse holds twice: walked unchanged, walked changed, and gone
    doubled = [
        {**r, "name": "an older repeat"} for r in before if r["id"] in (ids[60], ids[1], ids[31])
    ]
    return before, pages, doubled


def _walked(
    tmp_path: Path, held: frozenset[str], pages: dict[str, list[Record]], seed: int
) -> TableSnapshot:
    snapshot = TableSnapshot(JOBS, tmp_path, "run-1", [], held)
    rng = random.Random(seed)
    order = sorted(pages)
    rng.shuffle(order)
    for project_id in order:
        records = pages[project_id]
        for start in range(0, len(records), 9):
            snapshot.offer(records[start : start + 9], parent_id=project_id)
    snapshot.finish()
    return snapshot


def _seen_versions(pages: dict[str, list[Record]]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for records in pages.values():
        for record in records:
            seen.setdefault(record["id"], set()).add(row_hash(record))
    return seen


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 7 rows, so held and typed records each fill many batches."""
    monkeypatch.setattr(settings, "ARROW_BATCH_ROWS", 7)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("rolling", [False, True], ids=["exact", "rolling"])
def test_the_first_look_decides_what_the_hash_comparison_did(
    tmp_path: Path, seed: int, rolling: bool
) -> None:
    """Same load, new, changed and gone ids as comparing every hash again; the rows read back
    are exactly those to load, each id once with its chosen version."""
    before, pages, doubled = _churned(seed)
    current = pa.concat_tables([_current(before), _current(doubled)])
    snapshot = _walked(tmp_path, held_hashes(current), pages, seed)
    compared = current
    if rolling:
        skipped = {"p3", "p7"}
        pages = {p: records for p, records in pages.items() if p not in skipped}
        compared = outside_projects(current, skipped)
        (tmp_path / "rolling").mkdir()
        snapshot = _walked(tmp_path / "rolling", held_hashes(current), pages, seed)
    expected = _by_hash(_seen_versions(pages), compared)
    changes = diff(snapshot.versions(), compared)
    assert _outcome(changes) == expected
    assert expected[1] and expected[2] and expected[3], "the churn reaches every outcome"
    chosen = {i: min(v) for i, v in _seen_versions(pages).items()}
    loaded = [row for batch in snapshot.batches(changes.load_ids) for row in batch.to_pylist()]
    assert sorted(row["id"] for row in loaded) == sorted(expected[0])
    assert all(row[HASH] == chosen[row["id"]] for row in loaded)


def test_doubled_ids_are_loaded_again_even_when_walked_unchanged(tmp_path: Path) -> None:
    """An id with two current versions is never held, so its row is typed and read back."""
    records = [job("j1", "p1", 1), job("j2", "p1", 2)]
    current = pa.concat_tables([_current(records), _current([{**records[0], "name": "old"}])])
    snapshot = _walked(tmp_path, held_hashes(current), {"p1": records}, 0)
    changes = diff(snapshot.versions(), current)
    assert changes.load_ids.to_pylist() == ["j1"] and (changes.new, changes.changed) == (0, 1)
    loaded = [row for batch in snapshot.batches(changes.load_ids) for row in batch.to_pylist()]
    assert [(row["id"], row[HASH]) for row in loaded] == [("j1", row_hash(records[0]))]


def test_records_fetched_one_by_one_get_the_first_look_too(tmp_path: Path) -> None:
    """After `replace`: a fetched record the warehouse holds loads nothing, a changed one
    loads its fetched version, an id whose fetch found nothing is gone."""
    records = [job(f"j{n}", "p1", n) for n in range(4)]
    current = _current(records)
    listed = [records[0], {**records[1], "status": "completed"}, records[2], records[3]]
    snapshot = _walked(tmp_path, held_hashes(current), {"p1": listed}, 0)
    fetched = {**records[2], "status": "cancelled"}
    snapshot.replace(
        ["j1", "j2", "j3"],
        [(records[1], "p1"), (fetched, "p1")],
    )
    changes = diff(snapshot.versions(), current)
    assert _outcome(changes) == ({"j2"}, 0, 1, {"j3"})
    loaded = [row for batch in snapshot.batches(changes.load_ids) for row in batch.to_pylist()]
    assert [(row["id"], row["status"]) for row in loaded] == [("j2", "cancelled")]


def test_a_breach_is_typed_row_by_row_once_and_reported(tmp_path: Path) -> None:
    """A batch with a value that breaks the contract takes the row-by-row path, in the same
    one call, and its breach is reported once."""
    issues: list[Issue] = []
    snapshot = TableSnapshot(JOBS, tmp_path, "run-1", issues, frozenset())
    snapshot.offer([job("j1", "p1", 1), job("j2", "p1", 2, latitude="north")], "p1")
    snapshot.finish()
    rows = [row for batch in snapshot.batches() for row in batch.to_pylist()]
    assert sorted(row["id"] for row in rows) == ["j1", "j2"]
    assert [(issue["record_id"], issue["field"]) for issue in issues] == [("j2", "latitude")]
