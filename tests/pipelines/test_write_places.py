"""Every place `drone-sync` writes is one docs/install.md lists ("Where drone-sync writes").

The commands a deploy runs (`run` with the models, `status`, `metrics`, `dashboard`) run from
a project folder with HOME, dlt's data folder, the temporary folder and the cache folder each
in a folder of their own, so whatever they leave anywhere is found; each place found must be
named in install.md, and the temporary folder must be left empty. It used to say the tool
writes only in the project folder, while every run adds a link in dlt's data folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.simulator_process import SimulatorHandle

from .cli_helpers import EXIT_OK, REPO, cli_env, run_cli

pytestmark = pytest.mark.e2e

INSTALL = REPO / "docs" / "install.md"
# where each thing found is, as install.md must name it
PROJECT_PLACES = {
    "drone_ops_warehouse.duckdb": "drone_ops_warehouse.duckdb",
    "drone_ops_warehouse.duckdb.lock": "<warehouse>.lock",
    "drone_ops_warehouse.duckdb.access.lock": "<warehouse>.access.lock",
    "drone_ops_warehouse_bi.duckdb": "<warehouse stem>_bi.duckdb",
    "drone_ops_warehouse_bi_dashboard.html": "<warehouse stem>_bi_dashboard.html",
    ".dlt_pipelines": ".dlt_pipelines/",
    ".drone_sync": ".drone_sync/",
    ".dlt": ".dlt/",
}
DATA_DIR_PLACES = {"pipelines": "$DLT_DATA_DIR/pipelines/", ".anonymous_id": ".anonymous_id"}


def test_every_place_the_commands_write_is_in_install_md(
    tmp_path: Path, tiny_sim: SimulatorHandle
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = cli_env(
        tmp_path,
        base_url=tiny_sim.base_url,
        api_key=tiny_sim.read_key,
        extra={"TMPDIR": str(temporary), "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    for args in (["init"], ["run"], ["status"], ["metrics"], ["dashboard"]):
        if args == ["run"]:
            # the starter's placeholder key would be refused: the environment gives the key
            (project / ".dlt" / "secrets.toml").unlink()
        result = run_cli(args, env, project)
        assert result.code == EXIT_OK, result.describe()

    documented = INSTALL.read_text(encoding="utf-8")
    found = {
        "project": sorted(path.name for path in project.iterdir()),
        "data": sorted(path.name for path in (tmp_path / "dlt-data").iterdir()),
        "elsewhere": sorted(
            str(path.relative_to(tmp_path))
            for path in tmp_path.iterdir()
            if path.name not in ("project", "dlt-data", "home", "tmp")
        ),
    }
    missing = [
        f"{where}: {name} ({places.get(name, 'not in the test list')})"
        for where, places in (("project", PROJECT_PLACES), ("data", DATA_DIR_PLACES))
        for name in found[where]
        if places.get(name) is None or places[name] not in documented
    ]
    assert not missing, f"written but not in install.md: {missing}"
    assert not found["elsewhere"], f"written outside every documented place: {found}"
    assert not list((tmp_path / "home").iterdir()), "nothing is written into HOME"
    assert not list(temporary.iterdir()), "the temporary folder is left as it was"
