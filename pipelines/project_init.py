"""`drone-sync init [DIR]`: the starter settings of a project folder, from the package's templates.

Why a command: a wheel has no repository beside it, and dlt reads `.dlt/` from the folder a
command runs in. The templates are package data (`pipelines/starter/`), kept equal to the
repository's `.dlt/` by tests/packaging. The secrets file is created 0600 and git-ignored, and
existing settings are never overwritten without `--force`, so a key cannot leak into a commit
or be replaced by the placeholder. Imports only the standard library: it runs before dlt loads.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .exit_codes import EXIT_CONFIG, EXIT_OK

__all__ = ["STARTER_FILES", "InitRefused", "init_command", "starter_text", "write_starter"]

SETTINGS_FOLDER = ".dlt"
IGNORE_LINE = "secrets.toml"
"""What `.dlt/.gitignore` holds: the secrets file, relative to the folder the ignore file is in."""


@dataclass(frozen=True)
class StarterFile:
    """One file `init` writes into `.dlt/`, from the template of the same name."""

    name: str
    mode: int


STARTER_FILES = (StarterFile("config.toml", 0o644), StarterFile("secrets.toml", 0o600))


class InitRefused(Exception):
    """A starter file exists already and `--force` was not given; nothing was written."""


def starter_text(name: str) -> str:
    """The template `name` (config.toml or secrets.toml), as the installed package holds it."""
    template = importlib.resources.files("drone_ops_sync.pipelines") / "starter" / name
    return template.read_text(encoding="utf-8")


def _write(path: Path, text: str, mode: int) -> None:
    """Write `text` with exactly `mode`: created with it (never readable by others, not even for
    a moment), and set again for a file that existed (`--force`) or a umask that narrowed it."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), mode)
        handle.write(text)


def _ignore_secrets(settings: Path) -> bool:
    """Make `.dlt/.gitignore` ignore the secrets file (one already there only gains the line
    it lacks); True when the file was written to."""
    ignore = settings / ".gitignore"
    text = ignore.read_text(encoding="utf-8") if ignore.is_file() else ""
    if IGNORE_LINE in (line.strip() for line in text.splitlines()):
        return False
    prefix = "\n" if text and not text.endswith("\n") else ""
    with ignore.open("a", encoding="utf-8") as handle:
        handle.write(f"{prefix}# written by drone-sync init: the API key stays out of git\n")
        handle.write(f"{IGNORE_LINE}\n")
    return True


def write_starter(folder: Path, *, force: bool = False) -> list[Path]:
    """Write the starter `.dlt/` into `folder` (created if missing); the paths written.
    `InitRefused`, before writing anything, when a starter file exists and not `force`."""
    settings = folder / SETTINGS_FOLDER
    existing = [settings / f.name for f in STARTER_FILES if (settings / f.name).exists()]
    if existing and not force:
        raise InitRefused(
            f"{' and '.join(map(str, existing))} already"
            f" {'exists' if len(existing) == 1 else 'exist'}; nothing written (--force overwrites)"
        )
    settings.mkdir(parents=True, exist_ok=True)
    written = []
    for starter in STARTER_FILES:
        path = settings / starter.name
        _write(path, starter_text(starter.name), starter.mode)
        written.append(path)
    if _ignore_secrets(settings):
        written.append(settings / ".gitignore")
    return written


def init_command(folder: Path, *, force: bool, as_json: bool) -> int:
    """`drone-sync init`: writes the starter settings, says what it wrote and what comes next;
    a refusal is one line and exit 2. `as_json`: one `init` or `error` object on stdout."""
    try:
        written = write_starter(folder, force=force)
    except InitRefused as exc:
        return _refused(str(exc), as_json)
    except OSError as exc:
        return _refused(f"cannot write into {folder}: {exc}", as_json)
    where = "" if folder.resolve() == Path.cwd().resolve() else f"cd {folder} && "
    next_step = (
        "set sources.drone_ops.base_url in .dlt/config.toml and your API key in"
        " .dlt/secrets.toml (or SOURCES__DRONE_OPS__BASE_URL and SOURCES__DRONE_OPS__API_KEY),"
        f" then run: {where}drone-sync check"
    )
    if as_json:
        sys.stdout.write(_event("init", written=[str(path) for path in written], next=next_step))
        return EXIT_OK
    for path in written:
        note = " (readable by you only, git-ignored)" if path.name == "secrets.toml" else ""
        sys.stdout.write(f"wrote {path}{note}\n")
    sys.stdout.write(f"next: {next_step}\n")
    return EXIT_OK


def _refused(message: str, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(_event("error", kind="configuration error", message=message))
    else:
        sys.stderr.write(f"drone-sync: configuration error: {message}\n")
    return EXIT_CONFIG


def _event(event: str, **fields: Any) -> str:
    """One JSON line, as `--log-format json` prints every event (`console/json_output.py`,
    which `init` does not import: it needs rich and the source)."""
    record = {"event": event, "ts": datetime.now(UTC).isoformat(timespec="milliseconds")}
    return json.dumps({**record, **fields}) + "\n"
