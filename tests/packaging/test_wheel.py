"""The wheel, built from the sdist as pip builds it, installed into a fresh virtual environment and
run from an empty folder: what a user gets from `pip install drone-ops-sync`.

An editable install reads every file from the checkout, so it hides what a wheel lacks (the dbt
project, the starter settings, a subpackage missing from pyproject's list) and what the checkout
adds (`sources`, `pipelines`, `testkit` importable from the repository root). Only a build and a
non-editable install show them.

How the fresh environment gets its dependencies: measured here, `pip install` of the wheel with
its dependencies into a new venv from the local package cache took 2 min 58 s (machine shared,
load average 10), too long for a test that runs with every suite. So the venv is new and the
wheel is installed into it with `--no-deps`, and a `.pth` file lends it this test environment's
site-packages for the dependencies. What a real install would catch is then asserted separately:
every third-party module the installed package imports (read from its files, function-level
imports included) must be provided by a distribution the wheel's `Requires-Dist` names (or an
extra of one it names, `dlt[postgres]`), with our own extras only where one is documented as
needed (orchestration: `dagster`; PostgreSQL: `postgres`). Stricter than a real install, which
would also accept a module that merely happens to arrive with another dependency.

The installed package folder is checked unchanged after a full run (dbt's target, logs, partial
parse state and user id go beside the warehouse or to a temporary folder, never into
site-packages, which is read-only for a non-root user).

The same run shows that every place `drone-sync` writes is one docs/install.md lists ("Where
drone-sync writes"): the commands a deploy runs (`init`, `check`, `run` with the models,
`status`, `metrics`, `dashboard`) run from a project folder with HOME, dlt's data folder, the
temporary folder and the cache folder each in a folder of their own, so whatever they leave
anywhere is found; each place found must be named in install.md, and the temporary folder must
be left empty.

A fleet runs as deployed too (docs/fleet.md): workspaces set only in an empty folder's `.dlt/`
and the environment, synced by the installed `drone-sync run --parallel 2`, whose worker
processes start from the venv's interpreter and import the installed modules.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import duckdb
import pytest
from packaging.requirements import Requirement

from drone_ops_sync.pipelines.exit_codes import EXIT_FAILED, EXIT_OK
from testkit.simulator_process import SimulatorHandle, running_simulator
from tests.pipelines.warehouse_check import api_snapshot, current_rows, mismatches

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "drone_ops_sync"
INSTALLED_FOLDERS = ("sources", "pipelines", "orchestration", "simulator", "models")
REPOSITORY_ONLY = ("bench", "testkit", "tests")
BUILD_TIMEOUT = 600.0
RUN_TIMEOUT = 600.0
"""A tiny sync with the models takes 20-60 s here; the bound only stops a hung one."""
MARTS = (
    "dim_projects",
    "dim_jobs",
    "dim_webhooks",
    "fct_job_occurrences",
    "fct_project_status_history",
    "fct_webhook_deliveries",
    "fct_metrics",
)
STRAY_DBT_OUTPUT = (
    "models/target/run/drone_ops/staging/stg_x.sql",
    "models/dbt_packages/other/models/other.yml",
    "models/logs/dbt.yml",
)
"""Git-ignored files a checkout may hold, matched by the dbt project's globs: never packaged."""
EXTRA_FOR_FOLDER = {"orchestration": "dagster"}
"""Installed subpackages that need an extra (docs/install.md)."""
EXTRA_FOR_MODULE = {"psycopg2": "postgres"}
"""Third-party modules imported only on a path that needs an extra (`--destination postgres`)."""
DEPENDENCY_SCRIPTS = ("dbt",)
"""Console scripts of dependencies that our code runs, which a real install puts in the venv."""
DROPPED_ENV = ("SOURCES__", "DESTINATION__", "RUNTIME__", "NORMALIZE__", "DLT_", "PYTHON")
INSTALL_DOC = REPO / "docs" / "install.md"
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
"""What a project folder may hold after the commands, as install.md must name each."""
DATA_DIR_PLACES = {"pipelines": "$DLT_DATA_DIR/pipelines/", ".anonymous_id": ".anonymous_id"}
"""What dlt's data folder may hold, as install.md must name each."""


@dataclass(frozen=True)
class Installed:
    """The wheel and the fresh venv it is installed into."""

    wheel: Path
    venv: Path
    site_packages: Path

    @property
    def package(self) -> Path:
        return self.site_packages / NAMESPACE

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


def _run(
    argv: Sequence[str | Path],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = BUILD_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _source_files() -> list[str]:
    """The checkout's files as git sees them (tracked, and new ones not ignored)."""
    listed = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the source files to build from are unknown")
    return [name for name in listed.stdout.split("\0") if name and (REPO / name).is_file()]


def _build(tmp: Path) -> tuple[Path, Path]:
    """sdist from a clean copy of the sources (no stale build/ folder can leak into it), then
    the wheel from that sdist with pip, as `pip install <sdist>` would build it."""
    source = tmp / "source"
    for name in _source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    for stray in STRAY_DBT_OUTPUT:  # what a hand-run `dbt` in models/ leaves in a checkout
        (source / stray).parent.mkdir(parents=True, exist_ok=True)
        (source / stray).write_text("select 1\n")
    dist = tmp / "dist"
    dist.mkdir()
    _ok(
        _run(
            [
                sys.executable,
                "-c",
                "import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])",
                dist,
            ],
            cwd=source,
        )
    )
    (sdist,) = dist.glob("*.tar.gz")
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, sdist], cwd=tmp))
    (wheel,) = dist.glob("*.whl")
    return sdist, wheel


def _fresh_venv(tmp: Path, wheel: Path) -> Installed:
    venv = tmp / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp))
    python = venv / "bin" / "python"
    site = Path(
        _ok(
            _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp)
        ).strip()
    )
    _ok(
        _run(
            [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
            cwd=tmp,
        )
    )
    # dependencies from this test environment, after the venv's own site-packages
    (site / "_test_environment_dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n", encoding="utf-8"
    )
    # a .pth lends modules, not console scripts: dagster-dbt runs the `dbt` beside the interpreter
    for script in DEPENDENCY_SCRIPTS:
        (venv / "bin" / script).symlink_to(Path(sys.executable).with_name(script))
    return Installed(wheel, venv, site)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _build(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def installed(
    built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    yield _fresh_venv(tmp_path_factory.mktemp("install"), built[1])


def user_env(tmp_path: Path, installed: Installed) -> dict[str, str]:
    """A user's shell: no dlt settings, no PYTHONPATH to the checkout, the venv's bin/ first,
    HOME and dlt's data folder in tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
    (tmp_path / "home").mkdir(exist_ok=True)
    env["HOME"] = str(tmp_path / "home")
    env["DLT_DATA_DIR"] = str(tmp_path / "dlt-data")
    env["PATH"] = f"{installed.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _tree(folder: Path) -> dict[str, int]:
    """Every file below `folder` but Python's bytecode cache, with its modification time."""
    return {
        str(path.relative_to(folder)): path.stat().st_mtime_ns
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


# --- what the wheel holds ------------------------------------------------------------------


def test_wheel_holds_one_top_level_name_and_every_file_of_the_installed_folders(
    built: tuple[Path, Path],
) -> None:
    _, wheel = built
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    dist_info = {top for top in tops if top.endswith(".dist-info")}
    assert len(dist_info) == 1 and tops - dist_info == {NAMESPACE}
    assert not {f"{NAMESPACE}/{folder}" for folder in REPOSITORY_ONLY} & {
        "/".join(name.split("/")[:2]) for name in names
    }
    assert f"{NAMESPACE}/__init__.py" not in names, "drone_ops_sync is a namespace package"
    expected = {
        f"{NAMESPACE}/{name}"
        for name in _source_files()
        if name.split("/")[0] in INSTALLED_FOLDERS and "__pycache__" not in name
    }
    assert expected - set(names) == set(), "files of the installed folders left out of the wheel"
    assert not {f"{NAMESPACE}/{stray}" for stray in STRAY_DBT_OUTPUT} & set(names)
    for data in (
        "models/dbt_project.yml",
        "models/profiles.yml",
        "pipelines/starter/config.toml",
        "pipelines/starter/secrets.toml",
    ):
        assert f"{NAMESPACE}/{data}" in names
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info.pop()}/entry_points.txt").decode()
    assert "drone-sync = drone_ops_sync.pipelines.console_script:main" in entry_points


def test_sdist_holds_the_installed_folders_and_no_repository_only_package(
    built: tuple[Path, Path],
) -> None:
    """The wheel above is built from this sdist, so it carries what the wheel needs. setuptools
    adds `tests/test*.py` to every sdist by its own default; harmless, they are not installed."""
    sdist, _ = built
    with tarfile.open(sdist) as archive:
        folders = {Path(name).parts[1] for name in archive.getnames() if len(Path(name).parts) > 1}
    assert not {"bench", "testkit"} & folders, folders
    assert set(INSTALLED_FOLDERS) <= folders


# --- the dependencies a real install would bring --------------------------------------------


def _third_party_imports(package: Path) -> dict[str, set[str]]:
    """Top-level third-party module -> the installed subpackages importing it."""
    imported: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        folder = path.relative_to(package).parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in (NAMESPACE, "__future__"):
                    imported.setdefault(top, set()).add(folder)
    return imported


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(requirements: Sequence[str], extras: set[str]) -> set[str]:
    """Distributions the requirements name directly, with `extras` active, plus what the extras
    they name add (`dlt[postgres]` declares dlt's PostgreSQL driver). Deeper transitive
    dependencies do not count: a module we import must be a dependency we declare, or a
    dependency's release that drops it breaks the install."""
    found: set[str] = set()
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker and not any(
            requirement.marker.evaluate({"extra": extra}) for extra in {""} | extras
        ):
            continue
        found.add(_normal(requirement.name))
        try:
            nested = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        for inner_text in nested:
            inner = Requirement(inner_text)
            named_extra = inner.marker is not None and not inner.marker.evaluate({"extra": ""})
            if named_extra and any(
                inner.marker.evaluate({"extra": extra})  # type: ignore[union-attr]
                for extra in requirement.extras
            ):
                found.add(_normal(inner.name))
    return found


def test_requires_dist_covers_every_import_of_the_installed_package(
    installed: Installed,
) -> None:
    declared = (
        metadata.Distribution.at(
            next(installed.site_packages.glob("drone_ops_sync-*.dist-info"))
        ).requires
        or []
    )
    providers = metadata.packages_distributions()
    base = _declared(declared, set())
    uncovered = []
    for module, folders in sorted(_third_party_imports(installed.package).items()):
        extras = {EXTRA_FOR_FOLDER[f] for f in folders if f in EXTRA_FOR_FOLDER}
        extras |= {EXTRA_FOR_MODULE[module]} if module in EXTRA_FOR_MODULE else set()
        available = _declared(declared, extras) if extras else base
        distributions = {_normal(name) for name in providers.get(module, [])}
        if not distributions & available:
            uncovered.append(f"{module} (imported by {sorted(folders)}, from {distributions})")
    assert uncovered == [], "imported but not brought by Requires-Dist: " + "; ".join(uncovered)


# --- the installed command, from an empty folder --------------------------------------------


def _drone_sync(
    installed: Installed, args: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    return _run([installed.bin("drone-sync"), *args], cwd=cwd, env=env, timeout=RUN_TIMEOUT)


def _configure(project: Path, sim: SimulatorHandle) -> None:
    """What the user does after `init`: the address in config.toml, the key in secrets.toml."""
    config = project / ".dlt" / "config.toml"
    text, count = re.subn(
        r"(?m)^# base_url = .*$", f'base_url = "{sim.base_url}"', config.read_text()
    )
    assert count == 1, "the starter config has a commented base_url line to fill in"
    config.write_text(text)
    secrets = project / ".dlt" / "secrets.toml"
    secrets.write_text(secrets.read_text().replace("<your read-only API key>", sim.read_key))


def _empty_project(tmp_path: Path, installed: Installed) -> tuple[Path, Path, dict[str, str]]:
    """An empty project folder, a temporary folder of its own and the user's environment with
    the temporary and cache folders pointed into `tmp_path`, so whatever a command leaves
    anywhere is found."""
    project, temporary = tmp_path / "project", tmp_path / "tmp"
    project.mkdir()
    temporary.mkdir()
    env = user_env(tmp_path, installed)
    env["TMPDIR"] = str(temporary)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return project, temporary, env


def test_installed_drone_sync_runs_from_an_empty_folder(
    installed: Installed, tmp_path: Path
) -> None:
    project, temporary, env = _empty_project(tmp_path, installed)
    before = _tree(installed.package)

    version = _ok(_drone_sync(installed, ["--version"], project, env))
    assert version == f"drone-sync {installed.wheel.name.split('-')[1]}\n"
    where = _ok(
        _run(
            [
                installed.bin("python"),
                "-c",
                "import drone_ops_sync.pipelines as p; print(p.__file__)",
            ],
            cwd=project,
            env=env,
        )
    )
    assert Path(where.strip()).is_relative_to(installed.package), "not the installed copy"
    _ok(_drone_sync(installed, ["init"], project, env))
    _ok(_drone_sync(installed, ["sim", "serve", "--help"], project, env))

    with running_simulator(seed=7, scale="tiny") as sim:
        _configure(project, sim)
        for args in (["check"], ["run"], ["status"], ["metrics"], ["dashboard"]):
            _ok(_drone_sync(installed, args, project, env))

    warehouse = project / "drone_ops_warehouse.duckdb"
    with duckdb.connect(str(warehouse), read_only=True) as connection:
        tables = {
            row[0]
            for row in connection.execute(
                "select table_name from information_schema.tables"
                " where table_schema = 'drone_ops_marts'"
            ).fetchall()
        }
        assert set(MARTS) <= tables
        projects = connection.execute("select count(*) from drone_ops_marts.dim_projects")
        assert projects.fetchone()[0] > 0  # type: ignore[index]
    # the dashboard page, made of the package's template, base map and map library (package data)
    page = (project / "drone_ops_warehouse_bi_dashboard.html").read_text(encoding="utf-8")
    assert "Natural Earth" in page and "fct_metrics" in page
    assert "Leaflet 1.9.4" in page and "Data does not appear to be in a KDBush format" in page
    assert "Copyright (c) 2024, Mapbox" in page and "Vladimir Agafonkin" in page
    assert _tree(installed.package) == before, "something wrote into the installed package"
    assert not {"target", "logs", "dbt_packages"} & {p.name for p in project.iterdir()}
    assert_every_place_written_is_documented(tmp_path, project, temporary)


def assert_every_place_written_is_documented(
    tmp_path: Path, project: Path, temporary: Path, places: Mapping[str, str] = PROJECT_PLACES
) -> None:
    """Each thing in the project folder and in dlt's data folder is named in install.md;
    nothing is anywhere else in `tmp_path`, HOME is empty, the temporary folder is left as it
    was. It used to say the tool writes only in the project folder, while every run adds a
    link in dlt's data folder."""
    documented = INSTALL_DOC.read_text(encoding="utf-8")
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
        f"{where}: {name} ({listed.get(name, 'not in the test list')})"
        for where, listed in (("project", places), ("data", DATA_DIR_PLACES))
        for name in found[where]
        if listed.get(name) is None or listed[name] not in documented
    ]
    assert not missing, f"written but not in install.md: {missing}"
    assert not found["elsewhere"], f"written outside every documented place: {found}"
    assert not list((tmp_path / "home").iterdir()), "nothing is written into HOME"
    assert not list(temporary.iterdir()), "the temporary folder is left as it was"


FLEET = ("acme", "north", "south", "zen")
"""Workspace n of the simulator, named as a user names clients. No `default`: the starter
config's top-level base_url stays commented out, so the fleet is named workspaces only."""
REFUSED = "south"
"""Given acme's key: a real key, but another workspace's, so its API refuses it."""
KEY_FROM_ENVIRONMENT = "north"
"""Its key is in the environment, the others' in secrets.toml: the two ways fleet.md names."""
FLEET_PLACES = {
    **PROJECT_PLACES,
    "drone_ops_warehouse.duckdb.access.lock.want": "<warehouse>.access.lock.want",
    **{
        f"drone_ops_warehouse.duckdb.drone_ops_{name}.lock": "<warehouse>.<dataset>.lock"
        for name in FLEET
    },
}
"""What a fleet's project folder may hold besides: a run lock per workspace, and the sign a
step leaves while it waits for the DuckDB file (the workers' loads queue for it)."""


def _configure_fleet(project: Path, sim: SimulatorHandle, keys: Mapping[str, str]) -> None:
    """docs/fleet.md's tables, added to the files `init` wrote: each workspace's address in
    config.toml, its key in secrets.toml (but the one whose key is in the environment)."""
    config = project / ".dlt" / "config.toml"
    secrets = project / ".dlt" / "secrets.toml"
    addresses, secret_keys = config.read_text(), secrets.read_text()
    for n, name in enumerate(FLEET):
        table = f"\n[sources.drone_ops.workspaces.{name}]\n"
        addresses += f'{table}base_url = "{sim.workspace(n).base_url}"\n'
        if name != KEY_FROM_ENVIRONMENT:
            secret_keys += f'{table}api_key = "{keys[name]}"\n'
    config.write_text(addresses)
    secrets.write_text(secret_keys)


def _rows(warehouse: Path, sql: str) -> list[dict[str, object]]:
    """Rows as dicts; the file is opened read-only, as a BI tool would open it."""
    with duckdb.connect(str(warehouse), read_only=True) as connection:
        cursor = connection.execute(sql)
        names = [column[0] for column in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_installed_fleet_runs_from_an_empty_folder_and_isolates_a_refused_workspace(
    installed: Installed, tmp_path: Path
) -> None:
    """docs/fleet.md as deployed: four workspaces of one simulator process over HTTP, set only
    in `.dlt/` and the environment of an empty folder, synced by the installed `drone-sync` with
    two worker processes, which start from the venv's interpreter and the installed modules.
    The workspace given another's key fails alone: one line names it and the setting to fix,
    the exit code says a workspace failed, nothing of it is loaded, and each of the other three
    holds exactly its own API's rows in its own schema. The workers write only where install.md
    says, and nothing into the package. `--no-models`: the models are the single run's test."""
    project, temporary, env = _empty_project(tmp_path, installed)
    before = _tree(installed.package)
    warehouse = project / "drone_ops_warehouse.duckdb"
    _ok(_drone_sync(installed, ["init"], project, env))

    extra = ["--workspaces", str(len(FLEET))]
    with running_simulator(seed=23, scale="tiny", admin=False, extra_args=extra) as sim:
        keys = {name: sim.workspace(n).read_key for n, name in enumerate(FLEET)}
        apis = {
            name: api_snapshot(sim.workspace(n).base_url, keys[name])
            for n, name in enumerate(FLEET)
        }
        env[f"SOURCES__DRONE_OPS__WORKSPACES__{KEY_FROM_ENVIRONMENT.upper()}__API_KEY"] = keys[
            KEY_FROM_ENVIRONMENT
        ]
        _configure_fleet(project, sim, {**keys, REFUSED: keys["acme"]})
        checked = _drone_sync(installed, ["check"], project, env)
        done = _drone_sync(installed, ["run", "--parallel", "2", "--no-models"], project, env)

    projects = [set(apis[name]["projects"]) for name in FLEET]
    assert all(projects) and len(set().union(*projects)) == sum(map(len, projects)), (
        "the workspaces share project ids: a row loaded under another would go unseen"
    )
    assert checked.returncode != EXIT_OK, checked.stdout
    assert f"workspace {REFUSED}\n  fail " in checked.stdout, checked.stdout
    assert checked.stdout.count("  fail ") == 1, checked.stdout

    output = f"{done.stdout}\n{done.stderr}"
    assert done.returncode == EXIT_FAILED, output
    assert "Traceback" not in output, output
    assert keys["acme"] not in output, "a key was printed"
    ended = {line.partition(":")[0]: line for line in done.stdout.splitlines()}
    refused = [line for line in output.splitlines() if REFUSED in line]
    assert refused == [ended[REFUSED]], output
    assert refused[0].startswith(f"{REFUSED}: failed") and "401" in refused[0], output
    assert f"sources.drone_ops.workspaces.{REFUSED}.api_key" in refused[0], output
    loaded = [name for name in FLEET if name != REFUSED]
    assert all(ended[name].startswith(f"{name}: success") for name in loaded), output

    for name in loaded:
        for table, records in apis[name].items():
            problems = mismatches(records, current_rows(warehouse, table, f"drone_ops_{name}"))
            assert not problems, f"{name}.{table}: {problems[:3]}"
    runs = _rows(
        warehouse,
        " union all ".join(
            f"select distinct '{name}' as schema_of, workspace, status"
            f" from drone_ops_{name}._sync_runs"
            for name in FLEET
        ),
    )
    assert sorted((r["schema_of"], r["workspace"], r["status"]) for r in runs) == sorted(
        (name, name, "failed" if name == REFUSED else "success") for name in FLEET
    )
    tables = _rows(warehouse, "select table_schema, table_name from information_schema.tables")
    schemas = {row["table_schema"] for row in tables}
    assert schemas <= {f"drone_ops_{name}{tail}" for name in FLEET for tail in ("", "_staging")}
    for row in tables:
        if row["table_schema"] == f"drone_ops_{REFUSED}" and row["table_name"] in apis[REFUSED]:
            loaded_rows = _rows(
                warehouse, f"select count(*) as n from drone_ops_{REFUSED}.{row['table_name']}"
            )
            assert loaded_rows == [{"n": 0}], f"{REFUSED}.{row['table_name']} loaded"

    assert _tree(installed.package) == before, "something wrote into the installed package"
    assert_every_place_written_is_documented(tmp_path, project, temporary, FLEET_PLACES)


DAGSTER_LOAD = """
from drone_ops_sync.orchestration.definitions import build_definitions
from drone_ops_sync.orchestration.manifest import dbt_project
from drone_ops_sync.pipelines.publish.dbt_build import PROJECT_DIR

build_definitions()
print(PROJECT_DIR)
print(dbt_project().manifest_path)
"""


def test_dagster_code_location_loads_from_the_installed_package(
    installed: Installed, tmp_path: Path
) -> None:
    """What `dagster dev -m drone_ops_sync.orchestration.definitions` loads (docs/install.md):
    the dbt project is the installed package data, and its manifest is parsed into the user's
    cache folder, not into site-packages."""
    project = tmp_path / "project"
    project.mkdir()
    env = user_env(tmp_path, installed)
    env["DAGSTER_DISABLE_TELEMETRY"] = "1"
    env["SOURCES__DRONE_OPS__BASE_URL"] = "http://127.0.0.1:9"
    env["SOURCES__DRONE_OPS__API_KEY"] = "not-used-to-load"
    before = _tree(installed.package)
    out = _ok(
        _run([installed.bin("python"), "-c", DAGSTER_LOAD], cwd=project, env=env, timeout=300)
    )
    project_dir, manifest = (Path(line) for line in out.strip().splitlines()[-2:])
    assert project_dir == installed.package / "models"
    assert manifest.is_file() and manifest.is_relative_to(Path(env["HOME"]) / ".cache")
    assert _tree(installed.package) == before, "something wrote into the installed package"


# --- the plain source in a user's project with its own `sources` and `pipelines` ------------

USER_MODULE = '''"""The user's own module, in a package named like a folder of our repository."""
MARKER = "the user's own sources.mine"
'''
USER_PIPELINE = '''"""The user's pipeline: the installed source beside the user's own modules."""
import dlt

import sources
from drone_ops_sync.sources.drone_ops import drone_ops
from sources.mine import MARKER

pipeline = dlt.pipeline(
    pipeline_name="user_project",
    destination=dlt.destinations.duckdb("user.duckdb"),
    dataset_name="drone_ops",
    pipelines_dir="dlt-pipelines",
)
pipeline.run(drone_ops(), loader_file_format="parquet")
print(MARKER)
print("sources from", sources.__file__)
'''


def test_plain_source_in_a_project_with_its_own_sources_and_pipelines(
    installed: Installed, tmp_path: Path
) -> None:
    """pitfalls 19: top-level names are global in site-packages. The user's `sources` and
    `pipelines` packages win, and the installed source is still found under its namespace."""
    project = tmp_path / "user-project"
    for package, module, text in (
        ("sources", "mine.py", USER_MODULE),
        ("pipelines", "load.py", USER_PIPELINE),
    ):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text("")
        (project / package / module).write_text(text)
    env = user_env(tmp_path, installed)
    with running_simulator(seed=11, scale="tiny") as sim:
        env["SOURCES__DRONE_OPS__BASE_URL"] = sim.base_url
        env["SOURCES__DRONE_OPS__API_KEY"] = sim.read_key
        done = _run(
            [installed.bin("python"), "-m", "pipelines.load"],
            cwd=project,
            env=env,
            timeout=RUN_TIMEOUT,
        )
    out = _ok(done)
    assert "the user's own sources.mine" in out
    assert f"sources from {project / 'sources' / '__init__.py'}" in out
    with duckdb.connect(str(project / "user.duckdb"), read_only=True) as connection:
        for table in ("projects", "jobs", "webhooks", "users"):
            rows = connection.execute(f"select count(*) from drone_ops.{table}").fetchone()
            assert rows is not None and rows[0] > 0, table
