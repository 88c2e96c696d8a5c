"""Workspaces: which API workspaces a warehouse holds, and each one's checked settings
(docs/fleet.md). The top-level `sources.drone_ops` settings are the workspace `default`; a
named one is `[sources.drone_ops.workspaces.<name>]`.

Why `base_url` and `api_key` are never inherited from the top level: a workspace that silently
used another's address or key would load one client's data under another's name. Every other
setting is inherited, so a fleet tunes once and overrides where one API differs. The names are
the union of the tables found in every config provider, because dlt's own lookup returns the
first provider's table and would hide the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import dlt
from dlt.common.configuration.accessors import config as dlt_config

from . import settings
from .config import (
    SETTING_NAMES,
    ConfigLookup,
    SourceConfig,
    checked_config,
    env_name,
    missing_setting,
    setting_name,
)
from .exceptions import ConfigError

DEFAULT_WORKSPACE = "default"
"""The workspace of the top-level settings; its raw tables stay in the dataset itself."""
WORKSPACES_SETTING = "workspaces"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
# a workspace's raw tables go to `<dataset>_<name>`; these names would land on a schema that
# the models (`<dataset>_stg`, `<dataset>_marts`) or dlt (`<dataset>_staging`,
# `<dataset>_<name>_staging`) already use
RESERVED_NAMES = frozenset({DEFAULT_WORKSPACE, "stg", "marts", "staging", "all"})
RESERVED_SUFFIX = "_staging"
IDENTITY_SETTINGS = ("base_url", "api_key")
"""Settings a named workspace must have itself (see the module docstring)."""


def workspace_dataset(dataset: str, name: str) -> str:
    """Where a workspace's raw tables live: the dataset itself for `default`, else
    `<dataset>_<name>`."""
    return dataset if name == DEFAULT_WORKSPACE else f"{dataset}_{name}"


def workspace_setting(name: str, setting: str) -> str:
    """A setting's name as the config files spell it for this workspace."""
    if name == DEFAULT_WORKSPACE:
        return setting_name(setting)
    return setting_name(f"{WORKSPACES_SETTING}.{name}.{setting}")


def workspace_env(name: str, setting: str) -> str:
    """The environment variable dlt reads for this workspace's setting."""
    if name == DEFAULT_WORKSPACE:
        return env_name(setting)
    return env_name(f"{WORKSPACES_SETTING}__{name}__{setting}")


def configured_names() -> tuple[str, ...]:
    """The workspaces the config names, `default` first when the top level has a base URL (or
    when no named workspace exists: a config without workspaces is the `default` one)."""
    named = _named_workspaces()
    has_default = not named or _provided(setting_name("base_url")) is not None
    return ((DEFAULT_WORKSPACE,) if has_default else ()) + tuple(sorted(named))


def selected_names(wanted: Sequence[str] | None) -> tuple[str, ...]:
    """The configured workspaces `--workspace` selects: all of them for none or `all`."""
    configured = configured_names()
    if not wanted or list(wanted) == ["all"]:
        return configured
    unknown = [name for name in wanted if name not in configured]
    if unknown:
        raise ConfigError(
            "--workspace",
            f"{', '.join(map(repr, unknown))} is not configured; configured:"
            f" {', '.join(configured)} (add [{setting_name(WORKSPACES_SETTING)}.<name>] to"
            " .dlt/config.toml)",
        )
    return tuple(dict.fromkeys(wanted))


def read_source_config(
    overrides: Mapping[str, Any] | None = None, lookup: ConfigLookup | None = None
) -> SourceConfig:
    """The default workspace's settings (the top-level `[sources.drone_ops]`), checked: the
    plain source's and the single-workspace reader, the same code as a named workspace's."""
    return read_workspace_config(DEFAULT_WORKSPACE, overrides, lookup)


def read_workspace_config(
    name: str = DEFAULT_WORKSPACE,
    overrides: Mapping[str, Any] | None = None,
    lookup: ConfigLookup | None = None,
) -> SourceConfig:
    """One workspace's settings, checked (`ConfigError` names the workspace's own setting):
    the one reader of settings, from dlt's providers unless `lookup` replaces them;
    `overrides` (tests, the demo) win over both."""
    check_name(name)
    given = dict(overrides or {})
    nested = _named_workspaces().get(name, {}) if name != DEFAULT_WORKSPACE else {}
    read = lookup or (lambda setting: _workspace_value(name, setting, nested))

    def raw(setting: str) -> Any:
        return given[setting] if setting in given else read(setting)

    values = {setting: raw(setting) for setting in SETTING_NAMES}
    for required in IDENTITY_SETTINGS:
        if values[required] is None:
            raise missing_setting(
                workspace_setting(name, required),
                workspace_env(name, required),
                secret=required == "api_key",
            )
    try:
        config = checked_config(**values)
    except ConfigError as exc:
        if name == DEFAULT_WORKSPACE or not exc.setting.startswith(settings.CONFIG_SECTION):
            raise
        setting = exc.setting.rpartition(".")[2]
        # the problem names the top-level variable and table; this workspace has its own
        problem = exc.problem.replace(env_name(setting), workspace_env(name, setting)).replace(
            f"[{settings.CONFIG_SECTION}]", f"[{workspace_setting(name, '')[:-1]}]"
        )
        raise ConfigError(workspace_setting(name, setting), problem) from None
    if name == DEFAULT_WORKSPACE:
        return config
    where = f"{workspace_setting(name, 'api_key')} (env {workspace_env(name, 'api_key')})"
    return replace(config, key_setting=where, url_setting=workspace_setting(name, "base_url"))


def check_name(name: str) -> None:
    """A workspace name that can be part of a schema name and clashes with none."""
    if name == DEFAULT_WORKSPACE:
        return
    where = setting_name(f"{WORKSPACES_SETTING}.{name}")
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            where,
            "a workspace name must be lowercase letters, digits and _, start with a letter and"
            " have at most 40 characters (it becomes part of a schema name)",
        )
    if name in RESERVED_NAMES or name.endswith(RESERVED_SUFFIX):
        raise ConfigError(
            where,
            f"{name!r} is reserved (default, all, stg, marts, staging and names ending in"
            f" {RESERVED_SUFFIX} name schemas the sync or the models use); choose another name",
        )


def _workspace_value(name: str, setting: str, nested: Any) -> Any:
    """A named workspace's own value (dlt's lookup, else `nested`: its table as the providers
    hold it, read once per workspace), else (except for its identity) the top-level one."""
    own = _provided(workspace_setting(name, setting))
    if own is None and isinstance(nested, Mapping):
        own = nested.get(setting)
    if own is not None or setting in IDENTITY_SETTINGS or name == DEFAULT_WORKSPACE:
        return own
    return _provided(setting_name(setting))


def _provided(key: str) -> Any:
    """What dlt's providers hold for a setting's full name (the key is read from secrets)."""
    return dlt.secrets.get(key) if key.endswith(".api_key") else dlt.config.get(key)


def _named_workspaces() -> dict[str, Any]:
    """Every provider's `workspaces` table merged by name (JSON text from the environment)."""
    merged: dict[str, Any] = {}
    section = tuple(settings.CONFIG_SECTION.split("."))
    for provider in dlt_config.config_providers:
        value, _ = provider.get_value(WORKSPACES_SETTING, Any, None, *section)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ConfigError(
                    setting_name(WORKSPACES_SETTING),
                    f"{env_name(WORKSPACES_SETTING)} is not JSON; expected e.g."
                    ' {"acme": {"base_url": "https://..."}}',
                ) from None
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(
                setting_name(WORKSPACES_SETTING),
                "must be a table of workspaces by name: [sources.drone_ops.workspaces.<name>]",
            )
        for name, body in value.items():
            merged.setdefault(str(name), {})
            if isinstance(body, Mapping):
                merged[str(name)] = {**body, **merged[str(name)]}
    return merged
