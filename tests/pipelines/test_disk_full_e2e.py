"""A full disk in every load path (docs/operations.md, "A full disk"): one line naming the
folder to free, exit 1, no traceback (ours or dlt's logger's), the warehouse as it was, and the
next run with space heals to the API.

The disk is real: a small tmpfs mounted in a private mount namespace (`unshare -m`), held by a
child process for the test's length, so nothing is mounted on the machine itself. Every
command that must see the mounts (the CLI, the reader of the warehouse, the filler) runs in
that namespace through `nsenter`. The tmpfs is filled with a filler file that leaves a few KB,
small enough that the refused write is the run's first load; deleting the filler gives the
space back. Two layouts: (a) dlt's pipelines folder full (`wh/.dlt_pipelines` on the tmpfs),
(b) the DuckDB file's folder full (`wh` on the tmpfs, dlt's and the sync's folders on roomy
ones of their own, so what the disk refuses is DuckDB's write); on a fresh warehouse also the
sync's spill folder full, and the DuckDB folder so full that a new file's headers are refused.

Skipped, saying why, when not root or when `unshare` or `mount` are refused (a container
without CAP_SYS_ADMIN).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from drone_ops_sync.pipelines.run.target import Target
from testkit.simulator_process import SimulatorHandle, stop_process

from .cli_helpers import (
    ALL_TABLES,
    EXIT_FAILED,
    EXIT_OK,
    TRACEBACK,
    Result,
    cli_command,
    cli_env,
    run_command,
)
from .test_sync_e2e import assert_equals_api

pytestmark = pytest.mark.e2e

SMALL = "64m"
"""Size of the tmpfs that fills up (the filler takes all of it but `LEAVE`)."""
ROOMY = "256m"
LEAVE = {"pipelines": 32 * 1024, "warehouse": 16 * 1024}
"""Bytes the filler leaves: measured to be refused at the run's first load (a fresh
warehouse's `_sync_delivery_marks`, a synced one's first load group), not at the lock or the
repairs before it, which end in the same one line."""
HEADERS_REFUSED = 8 * 1024
"""Left in the DuckDB file's folder, DuckDB creates a new file and cannot write its headers
whole (the file was then refused by every later run as not a DuckDB file)."""
RUN_TIMEOUT_S = 300.0
DATABASE = Path("wh") / "warehouse.duckdb"
DLT_NOISE = ("died in uncontrollable manner", "trace dump", "Transient exception", "Errno 18")

SNAPSHOT = """
import hashlib, json, os, sys
import duckdb
path, dataset = sys.argv[1], sys.argv[2]
tables = {}
if os.path.exists(path):
    con = duckdb.connect(path, read_only=True)
    names = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [dataset]
    ).fetchall()
    for (name,) in names:
        rows = sorted(map(repr, con.execute(f'SELECT * FROM {dataset}."{name}"').fetchall()))
        tables[name] = [len(rows), hashlib.sha256(chr(10).join(rows).encode()).hexdigest()]
    con.close()
print(json.dumps(tables, sort_keys=True))
"""
"""Every table of the dataset as row count and a hash of its rows, read in the namespace."""


class PrivateMounts:
    """A private mount namespace with tmpfs mounts, held by a child that lives until `close`
    (closing its stdin ends it, and the mounts with it)."""

    def __init__(self, mounts: Sequence[tuple[Path, str]]) -> None:
        script = " && ".join(
            f"mkdir -p '{folder}' && mount -t tmpfs -o size={size} tmpfs '{folder}'"
            for folder, size in mounts
        )
        self.holder = subprocess.Popen(
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                f"{script} && echo ready && exec cat >/dev/null",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != "ready":
            self.holder.wait(timeout=30)
            assert self.holder.stderr is not None
            refused = self.holder.stderr.read().strip()
            pytest.skip(f"a private tmpfs could not be mounted (unshare -m, mount): {refused}")

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Result:
        """Runs `argv` in the namespace (the working folder set inside it: a folder opened
        before entering would still be the one under the mount)."""
        inside = ["nsenter", "-t", str(self.holder.pid), "-m", "--", "env", "-C", str(cwd)]
        return run_command([*inside, *argv], env, cwd, timeout=RUN_TIMEOUT_S)

    def shell(self, command: str, cwd: Path) -> str:
        result = self.run(["sh", "-c", command], os.environ, cwd)
        assert result.code == 0, result.describe()
        return result.out

    def fill(self, folder: Path, leave: int) -> None:
        """Writes a filler that leaves `leave` bytes free on `folder`'s tmpfs."""
        available, block = map(int, self.shell(f"stat -f -c '%a %S' '{folder}'", folder).split())
        self.shell(f"fallocate -l {available * block - leave} '{folder}/filler'", folder)

    def unfill(self, folder: Path) -> None:
        self.shell(f"rm '{folder}/filler'", folder)

    def snapshot(self, cwd: Path, database: Path) -> dict[str, Any]:
        result = self.run(
            [sys.executable, "-c", SNAPSHOT, str(database), "drone_ops"], os.environ, cwd
        )
        assert result.code == 0, result.describe()
        tables: dict[str, Any] = json.loads(result.out)
        return tables

    def close(self) -> None:
        assert self.holder.stdin is not None
        self.holder.stdin.close()
        stop_process(self.holder)
        for stream in (self.holder.stdout, self.holder.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def private_mounts(mounts: Sequence[tuple[Path, str]]) -> Iterator[PrivateMounts]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    missing = [
        tool for tool in ("unshare", "nsenter", "mount", "fallocate") if not shutil.which(tool)
    ]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (util-linux)")
    namespace = PrivateMounts(mounts)
    try:
        yield namespace
    finally:
        namespace.close()


def layout(tmp_path: Path, full: str) -> tuple[Path, list[tuple[Path, str]]]:
    """The folder that fills up, and the mounts of the layout (see the module docstring)."""
    warehouse = tmp_path / DATABASE.parent
    pipelines = warehouse / ".dlt_pipelines"
    if full == "pipelines":
        return pipelines, [(pipelines, SMALL)]
    if full == "spill":
        return warehouse / ".drone_sync", [(warehouse / ".drone_sync", SMALL)]
    return warehouse, [
        (warehouse, SMALL),
        (pipelines, ROOMY),
        (warehouse / ".drone_sync", ROOMY),
    ]


def cli(mounts: PrivateMounts, env: Mapping[str, str], tmp_path: Path) -> Result:
    args = ["run", "--no-models", "--no-snapshot", "--database", str(DATABASE)]
    result = mounts.run(cli_command(args), env, tmp_path)
    result.args = args
    return result


def assert_one_line(result: Result, full_folder: Path) -> None:
    """Exit 1 and one line naming the full folder; no traceback and no dlt noise."""
    assert result.code == EXIT_FAILED, result.describe()
    assert TRACEBACK not in result.text, result.describe()
    assert not [noise for noise in DLT_NOISE if noise in result.text], result.describe()
    lines = result.lines()
    assert len(lines) == 1, result.describe()
    assert lines[0].startswith("drone-sync: disk full: no space left on device in"), lines[0]
    assert str(full_folder.resolve()) in lines[0], lines[0]
    assert "free space there and run again" in lines[0]


def assert_heals(
    mounts: PrivateMounts, env: Mapping[str, str], tmp_path: Path, sim: SimulatorHandle
) -> None:
    """The next run with space succeeds and the warehouse equals the API (read from a copy
    taken out of the namespace, so the usual independent check can read it)."""
    healed = cli(mounts, env, tmp_path)
    assert healed.code == EXIT_OK, healed.describe()
    assert TRACEBACK not in healed.text, healed.describe()
    copy = tmp_path / "copy" / DATABASE.name
    copy.parent.mkdir()
    mounts.shell(f"cp '{DATABASE}' '{copy}'", tmp_path)
    assert_equals_api(sim, Target(database=copy))


@pytest.mark.parametrize(
    ("full", "leave"),
    [
        ("pipelines", LEAVE["pipelines"]),
        ("warehouse", LEAVE["warehouse"]),
        ("warehouse", HEADERS_REFUSED),
        ("spill", 0),
    ],
    ids=["pipelines", "warehouse", "warehouse-new-file", "spill"],
)
def test_a_full_disk_on_a_fresh_warehouse(
    full: str, leave: int, tiny_sim: SimulatorHandle, tmp_path: Path
) -> None:
    folder, mounts_wanted = layout(tmp_path, full)
    env = cli_env(tmp_path, base_url=tiny_sim.base_url, api_key=tiny_sim.read_key)
    with private_mounts(mounts_wanted) as mounts:
        mounts.fill(folder, leave)
        failed = cli(mounts, env, tmp_path)
        assert_one_line(failed, folder)
        left = mounts.snapshot(tmp_path, DATABASE)
        if full == "spill":  # the walk spills after the first load (the marks), which fits
            left = {name: rows for name, rows in left.items() if name in ALL_TABLES}
        assert left == {}, "a refused first load left tables"
        mounts.unfill(folder)
        assert_heals(mounts, env, tmp_path, tiny_sim)


@pytest.mark.parametrize("full", ["pipelines", "warehouse"])
def test_a_full_disk_at_a_later_runs_load(
    full: str, tiny_sim: SimulatorHandle, tmp_path: Path
) -> None:
    folder, mounts_wanted = layout(tmp_path, full)
    env = cli_env(tmp_path, base_url=tiny_sim.base_url, api_key=tiny_sim.read_key)
    with private_mounts(mounts_wanted) as mounts:
        first = cli(mounts, env, tmp_path)
        assert first.code == EXIT_OK, first.describe()
        tiny_sim.churn(
            seed=5, update_fraction=0.2, delete_fraction=0.05, new_deliveries_per_webhook=3
        )
        before = mounts.snapshot(tmp_path, DATABASE)
        mounts.fill(folder, LEAVE[full])
        failed = cli(mounts, env, tmp_path)
        assert_one_line(failed, folder)
        assert mounts.snapshot(tmp_path, DATABASE) == before, (
            "the refused run changed the warehouse"
        )
        mounts.unfill(folder)
        assert_heals(mounts, env, tmp_path, tiny_sim)
