"""`python -m bench.working_folder`: how large dlt's working folder gets over many quiet runs.

A schedule runs the sync every few minutes for months, so whatever a run leaves in the
pipeline's working folder adds up (completed load packages did: `pipelines/run/
loaded_packages.py`). This syncs a tiny simulated workspace once, then `--runs` more times
with nothing changed, and prints the size of the working folder and of its completed packages
after the first run and at the end; the figure is quoted in docs/operations.md.

    python -m bench.working_folder --runs 100
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.sources.drone_ops import read_source_config
from testkit.simulator_process import running_simulator


def folder_size(folder: Path) -> tuple[int, int]:
    """Files and bytes under `folder` (none when it does not exist)."""
    files = [path for path in folder.rglob("*") if path.is_file()] if folder.is_dir() else []
    return len(files), sum(path.stat().st_size for path in files)


def describe(working: Path) -> str:
    loaded = working / "load" / "loaded"
    packages = len([p for p in loaded.iterdir() if p.is_dir()]) if loaded.is_dir() else 0
    files, size = folder_size(working)
    loaded_files, loaded_size = folder_size(loaded)
    return (
        f"working folder {files} files, {size / 1024:.0f} KB;"
        f" load/loaded {packages} packages, {loaded_files} files, {loaded_size / 1024:.0f} KB"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.working_folder")
    parser.add_argument("--runs", type=int, default=100, help="quiet runs after the first")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="drone-ops-folder-") as root,
        running_simulator(seed=args.seed, scale="tiny", admin=False) as sim,
    ):
        target = Target(database=Path(root) / "w.duckdb", pipelines_dir=Path(root) / "p")
        config = read_source_config({"base_url": sim.base_url, "api_key": sim.read_key})
        working = target.resolved_pipelines_dir() / target.pipeline_name()
        if not run_sync(target, config=config).ok:
            raise SystemExit("the first run failed")
        print(f"after the first run: {describe(working)}")
        for number in range(1, args.runs + 1):
            if not run_sync(target, config=config).ok:
                raise SystemExit(f"quiet run {number} failed")
        print(f"after {args.runs} quiet runs: {describe(working)}")


if __name__ == "__main__":
    main()
