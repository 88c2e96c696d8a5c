"""What the settings files and variables hold beyond the values `config.py` checks: a TOML file
that does not parse, and settings that nothing reads.

Why not leave either to dlt: it reports an unparsable `.dlt/*.toml` as a traceback that does
not name the file, and never looks at a key nobody asks for, so `max_worker = 4` silently keeps
the default. Here the first is one line naming the file, line and column (a `ConfigError`),
the second one warning per unknown key or section with the closest valid name (`strict` refuses
them instead). Only sections whose every name is known are looked at (the source's and its
workspaces', each `[destination.<type>]` from dlt's own spec classes, `[runtime]`, and the
caller's `also_known`); a section one level up only when its name is close to one of those,
since another source's section may share the file. A value is never shown, only names.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import types
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import dlt
import tomlkit
from dlt.common.configuration.providers.toml import (
    SettingsTomlProvider,
    TomlProviderReadException,
)
from dlt.common.configuration.specs import BaseConfiguration, known_sections
from tomlkit.exceptions import InvalidControlChar, ParseError, UnexpectedEofError

from . import settings
from .config import SETTING_NAMES
from .exceptions import ConfigError
from .tables.entities import ALL_TABLES

log = logging.getLogger(__name__)

WORKSPACES = "workspaces"
"""The table of named workspaces (`workspaces.py`), a key of the top level."""
SOURCE_ARGUMENTS = ("tables", "allow_mass_delete", "full_refresh", "workspace", "run")
"""Arguments of the `drone_ops` source function: dlt may inject them from the same section."""
RESOURCE_SECTIONS = (*ALL_TABLES, settings.SOURCE_NAME)
"""Tables under the source's section that are dlt's (per resource, the source function's)."""
SOURCE_SECTION = tuple(settings.CONFIG_SECTION.split("."))
LOOKED_AT = ("sources", "destination", "runtime")
"""The top-level sections whose names are known (the module docstring)."""
KEY_CUTOFF = 0.6
SECTION_CUTOFF = 0.8
"""How close a name must be to a known one to be called its misspelling: a key under a section
we own has no other owner; a section may be another source's or pipeline's on purpose."""
Section = tuple[str, ...]
_AT_LINE = re.compile(r"\s+at line \d+ col \d+$")
_warned: set[str] = set()
"""Warnings given in this process: each is said once, however often settings are read."""


def check_settings_files(*, also_known: Sequence[str] = (), refuse_as: str | None = None) -> None:
    """Makes dlt read its TOML files now, before a command reads any setting (one that does
    not parse is a `ConfigError`), then logs each unknown key and section once per process
    (`also_known`: dotted names the caller reads beyond the source's and dlt's) as a warning;
    `refuse_as` (the flag or variable that asks for it) makes them errors, and one
    `ConfigError` naming it."""
    try:
        dlt.config.config_providers  # noqa: B018 (the first access reads every file)
    except TomlProviderReadException as exc:
        raise unreadable_file(exc) from None
    found = unknown_settings(also_known, strict=refuse_as is not None)
    for message in found:
        if message not in _warned:
            _warned.add(message)
            log.log(logging.WARNING if refuse_as is None else logging.ERROR, message)
    if refuse_as is not None and found:
        count = f"{len(found)} unknown setting{'s' if len(found) > 1 else ''}"
        raise ConfigError(
            refuse_as, f"{count} (named above): correct or remove each, or run without {refuse_as}"
        )


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


def unknown_settings(also_known: Sequence[str] = (), *, strict: bool = False) -> list[str]:
    """One message per unknown key or section: as it was written, where, and the closest valid
    name; in each TOML file dlt read, and per environment variable."""
    extra: dict[Section, set[str]] = {}
    for dotted in also_known:
        *section, key = dotted.split(".")
        extra.setdefault(tuple(section), set()).add(key)
    return [
        _message(found, where, variable, strict=strict)
        for document, where, variable in (*_toml_documents(), *_environment_documents())
        for found in unknown_in(document, extra)
    ]


@dataclass(frozen=True)
class Unknown:
    """A key or section nothing reads: its path as written, the same path with the closest
    valid name (None when none is close), and the names to list when none is."""

    path: Section
    closest: Section | None
    section: bool
    known: tuple[str, ...] = ()


Extra = Mapping[Section, Collection[str]]


def unknown_in(document: Mapping[str, Any], extra: Extra) -> Iterator[Unknown]:
    """Every unknown key or section of one document: a TOML file, or one environment variable
    as the nested tables its name spells."""
    for top, body in document.items():
        if not isinstance(body, Mapping):
            continue
        if top == "sources":
            yield from _sources(body, extra)
        elif top == "destination":
            yield from _destinations(body, extra)
        elif top == "runtime":
            yield from _fields(("runtime",), body, _runtime_specs(), extra)
        elif top not in _dlt_sections() and (close := _closest(top, LOOKED_AT, SECTION_CUTOFF)):
            yield Unknown((top,), (close,), section=True)


def _sources(body: Mapping[str, Any], extra: Extra) -> Iterator[Unknown]:
    name = SOURCE_SECTION[-1]
    for key, table in body.items():
        if not isinstance(table, Mapping):
            continue
        if key == name:
            yield from _source_section(table, extra.get(SOURCE_SECTION, ()))
        elif _closest(key, (name,), SECTION_CUTOFF):
            yield Unknown((*SOURCE_SECTION[:-1], key), SOURCE_SECTION, section=True)


def _source_section(table: Mapping[str, Any], extra: Collection[str]) -> Iterator[Unknown]:
    keys = (*SETTING_NAMES, *SOURCE_ARGUMENTS, *extra)
    for key, value in table.items():
        path = (*SOURCE_SECTION, str(key))
        if key == WORKSPACES:
            yield from _workspaces(path, value)
        elif isinstance(value, Mapping):
            if key not in RESOURCE_SECTIONS:
                yield _unknown(path, (WORKSPACES, *RESOURCE_SECTIONS), section=True)
        elif key not in keys:
            yield _unknown(path, (*keys, WORKSPACES), known=SETTING_NAMES)


def _workspaces(path: Section, value: Any) -> Iterator[Unknown]:
    """Each named workspace's keys (JSON text from the environment is the same table)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return  # `workspaces.py` refuses it with its own message
    if not isinstance(value, Mapping):
        return
    for name, body in value.items():
        for key, inner in body.items() if isinstance(body, Mapping) else ():
            if key not in SETTING_NAMES:
                yield _unknown(
                    (*path, str(name), str(key)),
                    SETTING_NAMES,
                    section=isinstance(inner, Mapping),
                    known=SETTING_NAMES,
                )


def _destinations(body: Mapping[str, Any], extra: Extra) -> Iterator[Unknown]:
    """`[destination.<type>]`, or a named destination's table with its `destination_type`."""
    kinds = _destination_types()
    for name, table in body.items():
        if not isinstance(table, Mapping):
            continue
        kind = name if name in kinds else table.get("destination_type")
        if isinstance(kind, str) and kind in kinds:
            yield from _fields(("destination", name), table, _destination_specs(kind), extra)
        elif close := _closest(name, kinds, SECTION_CUTOFF):
            yield Unknown(("destination", name), ("destination", close), section=True)


def _fields(
    prefix: Section,
    table: Mapping[str, Any],
    specs: Sequence[type[BaseConfiguration]],
    extra: Extra,
) -> Iterator[Unknown]:
    """Keys of `table` that no field of dlt's config `specs` has (nor `extra`, ours); a field
    that is a config spec itself (`credentials`) is looked into the same way."""
    if not specs:
        return  # a spec dlt could not give: nothing to compare with
    fields: dict[str, Any] = {}
    for spec in specs:
        fields.update(spec.get_resolvable_fields())
    own = extra.get(prefix, ())
    for key, value in table.items():
        path = (*prefix, str(key))
        if key in own:
            continue
        if key not in fields:
            yield _unknown(path, (*fields, *own), section=isinstance(value, Mapping))
        elif isinstance(value, Mapping) and (inner := _config_classes(fields[key])):
            yield from _fields(path, value, inner, extra)


def _unknown(
    path: Section, candidates: Sequence[str], *, section: bool = False, known: Section = ()
) -> Unknown:
    close = _closest(path[-1], candidates, KEY_CUTOFF)
    return Unknown(path, (*path[:-1], close) if close else None, section, known)


def _closest(name: str, candidates: Collection[str], cutoff: float) -> str | None:
    close = difflib.get_close_matches(name.lower(), list(candidates), n=1, cutoff=cutoff)
    return close[0] if close else None


def _config_classes(hint: Any) -> tuple[type[BaseConfiguration], ...]:
    """The config specs a field's type hint allows (`Optional[...]`, unions, `Annotated`)."""
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    options = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    return tuple(o for o in options if isinstance(o, type) and issubclass(o, BaseConfiguration))


@cache
def _destination_types() -> frozenset[str]:
    import dlt.destinations

    return frozenset(dlt.destinations.__all__)


@cache
def _destination_specs(kind: str) -> tuple[type[BaseConfiguration], ...]:
    """dlt's config spec of a destination type: its fields are the section's keys."""
    from dlt.common.destination import Destination

    try:
        factory = Destination.from_reference(kind)
        spec = factory.spec if factory is not None else None
    except Exception:  # a destination dlt cannot make without more arguments
        return ()
    return (spec,) if isinstance(spec, type) and issubclass(spec, BaseConfiguration) else ()


@cache
def _runtime_specs() -> tuple[type[BaseConfiguration], ...]:
    """Every config spec dlt reads from `[runtime]` (each declares `__section__ = "runtime"`)."""
    from dlt.common.configuration.specs import RuntimeConfiguration
    from dlt.pipeline.configuration import PipelineRuntimeConfiguration

    specs: list[type[BaseConfiguration]] = [RuntimeConfiguration, PipelineRuntimeConfiguration]
    try:
        from dlt._workspace.configuration import WorkspaceRuntimeConfiguration
    except ImportError:
        pass
    else:
        specs.append(WorkspaceRuntimeConfiguration)
    return tuple(specs)


@cache
def _dlt_sections() -> frozenset[str]:
    """Every top-level section dlt itself names (`known_sections`)."""
    return frozenset(
        value
        for name, value in vars(known_sections).items()
        if name.isupper() and isinstance(value, str)
    )


Document = tuple[Mapping[str, Any], str, Section]
"""A document, where it is, and for a variable its name's parts."""


def _toml_documents() -> Iterator[Document]:
    for provider in dlt.config.config_providers:
        if not isinstance(provider, SettingsTomlProvider):
            continue
        for location in provider.present_locations:
            try:
                document: Any = tomlkit.parse(Path(location).read_text(encoding="utf-8")).unwrap()
            except (OSError, UnicodeDecodeError, ParseError):
                continue  # read by dlt a moment ago; a file changed since is not ours to judge
            yield document, os.path.normpath(location), ()


def _environment_documents() -> Iterator[Document]:
    """Each variable dlt would read for a looked-at section (or a name close to one), as the
    nested tables its name spells (`SOURCES__DRONE_OPS__MAX_WORKERS` is `max_workers` of
    `[sources.drone_ops]`): one variable, one document, its own warning."""
    for variable, value in os.environ.items():
        parts = tuple(part.lower() for part in variable.split("__"))
        if len(parts) < 2 or not all(parts) or variable != variable.upper():
            continue
        top = parts[0]
        if top not in LOOKED_AT and (
            top in _dlt_sections() or not _closest(top, LOOKED_AT, SECTION_CUTOFF)
        ):
            continue
        document: Any = value
        for part in reversed(parts):
            document = {part: document}
        yield document, "the environment", parts


def _message(found: Unknown, where: str, variable: Section, *, strict: bool) -> str:
    """The name as written and the closest valid one: dotted (a `[section]` in brackets) in a
    file; as the variable, with the rest of its name, in the environment."""

    def spelled(path: Section) -> str:
        if variable:
            return "__".join((*path, *variable[len(path) :])).upper()
        dotted = ".".join(path)
        return f"[{dotted}]" if found.section else dotted

    what = "section" if found.section and not variable else "setting"
    if found.closest is not None:
        hint = f"did you mean {spelled(found.closest)}?"
    elif found.known:
        hint = f"known: {', '.join(found.known)}"
    else:
        hint = "nothing reads it"
    outcome = "refused" if strict else "ignored"
    return f"unknown {what} {spelled(found.path)} in {where} is {outcome}; {hint}"
