"""What the settings files and variables hold beyond the values `config.py` checks: a TOML file
that does not parse, and keys under `[sources.drone_ops]` that no setting has.

Why not leave either to dlt: dlt reports an unparsable `.dlt/config.toml` or `secrets.toml` as
a long traceback naming every candidate path but not the file that broke, and it never looks at
a key nobody asks for, so `max_worker = 4` (for `max_workers`) silently keeps the default. Here
the first is one line naming the file, line and column (a `ConfigError`: exit 2), and the second
one warning per unknown key naming where it is and the closest known name. A misspelling is a
warning, not an error: the run does what it did before (every setting has a safe default or is
required and then refused on its own), and refusing a key dlt itself accepts would break a
config that also holds settings for dlt's source machinery.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dlt
import tomlkit
from dlt.common.configuration.providers.toml import (
    SettingsTomlProvider,
    TomlProviderReadException,
)
from tomlkit.exceptions import InvalidControlChar, ParseError, UnexpectedEofError

from . import settings
from .config import SETTING_NAMES, env_name, setting_name
from .exceptions import ConfigError

log = logging.getLogger(__name__)

WORKSPACES = "workspaces"
"""The table of named workspaces (`workspaces.py`), a key of the top level."""
SOURCE_ARGUMENTS = ("tables", "allow_mass_delete", "full_refresh", "workspace", "run")
"""Arguments of the `drone_ops` source function: dlt may inject them from the same section."""
_AT_LINE = re.compile(r"\s+at line \d+ col \d+$")
_warned: set[str] = set()
"""Warnings given in this process: each is said once, however often settings are read."""


def check_settings_files(*, warn_unknown: bool = False) -> None:
    """Makes dlt read its TOML files now, before a command reads any setting: a file that does
    not parse is a `ConfigError` naming the file, line and column instead of dlt's traceback
    from wherever dlt first looked. `warn_unknown` also warns of unknown keys (the commands that
    read the source's settings; a fleet's workspaces are looked at once, by the command, not by
    each workspace's process)."""
    try:
        dlt.config.config_providers  # noqa: B018 (the first access reads every file)
    except TomlProviderReadException as exc:
        raise unreadable_file(exc) from None
    if warn_unknown:
        warn_unknown_settings()


def unreadable_file(exc: TomlProviderReadException) -> ConfigError:
    """The file among dlt's candidates that fails to parse, and where; a secrets file's text is
    never quoted (a parser's message may show a character of the value)."""
    for path in exc.full_paths:
        if not os.path.isfile(path):
            continue
        shown = os.path.normpath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            return ConfigError(shown, f"cannot be read ({type(error).__name__}); fix the file")
        try:
            tomlkit.parse(text)
        except ParseError as error:
            problem = _parse_problem(error, text, secret=exc.file_name == "secrets.toml")
            return ConfigError(
                shown,
                f"line {error.line}, column {error.col}: {problem}; fix the file (TOML syntax:"
                ' key = "value" under a [section]) and run again',
            )
    return ConfigError(exc.file_name, "cannot be read by dlt; check its TOML syntax")


def _parse_problem(error: ParseError, text: str, *, secret: bool) -> str:
    lines = text.splitlines()
    line = lines[error.line - 1] if 0 < error.line <= len(lines) else ""
    if isinstance(error, InvalidControlChar) and error.col >= len(line):
        return "a string is not closed on this line (a missing closing quote?)"
    if isinstance(error, UnexpectedEofError):
        return (
            "the file ends inside a string, table header or array (a missing closing quote or"
            " bracket?)"
        )
    message = _AT_LINE.sub("", str(error))
    return re.sub(r"'[^']*'", "(not shown)", message) if secret else message


def warn_unknown_settings() -> list[str]:
    """Warns once per unknown key under `[sources.drone_ops]` and each named workspace's table,
    in the TOML files dlt read and in the environment; returns the warnings of this call."""
    said = []
    for warning in unknown_settings():
        if warning not in _warned:
            _warned.add(warning)
            log.warning(warning)
            said.append(warning)
    return said


def unknown_settings() -> list[str]:
    """One message per unknown key: the key as it was written, where, and the closest name."""
    found = [*_from_toml_files(), *_from_environment()]
    return [_message(path, where, environment=where == "the environment") for path, where in found]


def _message(path: tuple[str, ...], where: str, *, environment: bool) -> str:
    """`path` is the key's place below the section: (key,) or (workspaces, name, key)."""
    known = (*SETTING_NAMES, WORKSPACES, *SOURCE_ARGUMENTS) if len(path) == 1 else SETTING_NAMES
    prefix, key = path[:-1], path[-1]

    def spelled(name: str) -> str:
        dotted = ".".join((*prefix, name))
        return env_name("__".join((*prefix, name))) if environment else setting_name(dotted)

    close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    hint = f"did you mean {spelled(close[0])}?" if close else f"known: {', '.join(SETTING_NAMES)}"
    return f"unknown setting {spelled(key)} in {where} is ignored; {hint}"


def _from_toml_files() -> Iterator[tuple[tuple[str, ...], str]]:
    section = settings.CONFIG_SECTION.split(".")
    for provider in dlt.config.config_providers:
        if not isinstance(provider, SettingsTomlProvider):
            continue
        for location in provider.present_locations:
            try:
                document: Any = tomlkit.parse(Path(location).read_text(encoding="utf-8")).unwrap()
            except (OSError, UnicodeDecodeError, ParseError):
                continue  # read by dlt a moment ago; a file changed since is not ours to judge
            for part in section:
                document = document.get(part) if isinstance(document, Mapping) else None
            for path in _unknown_keys(document):
                yield path, os.path.normpath(location)


def _from_environment() -> Iterator[tuple[tuple[str, ...], str]]:
    prefix = env_name("")
    for variable, value in os.environ.items():
        if not variable.startswith(prefix):
            continue
        parts = tuple(part.lower() for part in variable[len(prefix) :].split("__"))
        if parts == (WORKSPACES,):
            try:
                tables = json.loads(value)
            except ValueError:
                continue  # `workspaces.py` refuses it with its own message
            for path in _unknown_keys({WORKSPACES: tables}):
                yield path, "the environment"
            continue
        top_level_unknown = len(parts) == 1 and parts[0] not in (*SETTING_NAMES, *SOURCE_ARGUMENTS)
        workspace_unknown = len(parts) == 3 and parts[0] == WORKSPACES
        if top_level_unknown or (workspace_unknown and parts[2] not in SETTING_NAMES):
            yield parts, "the environment"


def _unknown_keys(table: Any) -> Iterator[tuple[str, ...]]:
    """Keys of the source's table (and of each workspace's table in it) that no setting has;
    a nested table is dlt's per-resource configuration and left alone."""
    if not isinstance(table, Mapping):
        return
    for key, value in table.items():
        if key == WORKSPACES and isinstance(value, Mapping):
            for name, body in value.items():
                if isinstance(body, Mapping):
                    for inner, inner_value in body.items():
                        if inner not in SETTING_NAMES and not isinstance(inner_value, Mapping):
                            yield (WORKSPACES, str(name), str(inner))
        elif key not in (*SETTING_NAMES, *SOURCE_ARGUMENTS) and not isinstance(value, Mapping):
            yield (str(key),)
