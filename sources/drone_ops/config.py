"""Every setting of the source, read once and checked before any request is made.

Why not leave it to dlt's injection: dlt coerces a bad value deep inside the source call with
a long traceback, and splits a string where a list belongs into letters. Each value is parsed
here, so a bad one is one line naming the setting and what is expected (never the key), and
the source receives only checked, typed values.
"""

from __future__ import annotations

import ipaddress
import json
import math
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

from . import settings
from .exceptions import ConfigError
from .secrets import register_secret
from .tables.entities import ALL_TABLES

SECTION = settings.CONFIG_SECTION
ConfigLookup = Callable[[str], Any]
"""Returns the raw value a config provider holds for a setting name, or None."""


def setting_name(name: str) -> str:
    """`sources.drone_ops.<name>`, as the config files spell it."""
    return f"{SECTION}.{name}"


def env_name(name: str) -> str:
    """The environment variable dlt reads for a source setting."""
    return f"{SECTION.replace('.', '__').upper()}__{name.upper()}"


def missing_setting(setting: str, env: str, *, secret: bool) -> ConfigError:
    """The one message for a setting that has no value anywhere (source or destination)."""
    where = ".dlt/secrets.toml" if secret else ".dlt/config.toml"
    return ConfigError(setting, f"is not set: add it to {where} or set {env}")


@dataclass(frozen=True)
class SourceConfig:
    """The checked settings of one run, handed to the walk and the source as they are."""

    base_url: str
    api_key: str
    webhook_ids: tuple[str, ...] | None = None
    jobs_path: str = settings.JOBS_PATH_TEMPLATE
    max_workers: int = settings.DEFAULT_MAX_WORKERS
    max_requests_per_second: float | None = None
    max_requests_per_second_per_host: float | None = None
    max_retire_share: float = settings.DEFAULT_MAX_RETIRE_SHARE
    timeout_seconds: float = settings.DEFAULT_TIMEOUT_SECONDS
    max_attempts: int = settings.DEFAULT_MAX_ATTEMPTS
    retry_budget_seconds: float = settings.DEFAULT_RETRY_BUDGET_SECONDS
    job_refresh_slices: int = settings.DEFAULT_JOB_REFRESH_SLICES
    delivery_overlap_seconds: int = settings.DEFAULT_DELIVERY_OVERLAP_SECONDS
    key_setting: str = settings.KEY_SETTING
    """Where the key is set, as an error about a refused key names it (a named workspace's own
    setting: `workspaces.py`); not a setting itself."""
    url_setting: str = settings.URL_SETTING
    """Where the address is set, as an error about an unreachable or wrong API names it; not a
    setting itself either."""

    def __repr__(self) -> str:
        return f"SourceConfig(base_url={self.base_url!r}, api_key=<redacted>, ...)"


SETTING_NAMES = tuple(
    field.name for field in fields(SourceConfig) if field.name not in ("key_setting", "url_setting")
)
"""The fields of `SourceConfig` that are settings (read from dlt's config)."""


def checked_tables(tables: Sequence[str] | None) -> tuple[str, ...]:
    """The tables a run syncs (all when none are named), each once; `--resources` names them."""
    if not tables:
        return ALL_TABLES
    unknown = sorted(set(tables) - set(ALL_TABLES))
    if unknown:
        raise ConfigError(
            "--resources", f"unknown {', '.join(unknown)}; choose from {', '.join(ALL_TABLES)}"
        )
    return tuple(dict.fromkeys(tables))


def checked_config(**values: Any) -> SourceConfig:
    """Parses raw values (strings from the environment, typed values from TOML or Python);
    a value of None takes the default. The two required settings are set: the one caller,
    `read_workspace_config`, has named a missing one by the workspace's own setting."""
    defaults = SourceConfig(base_url="", api_key="")

    def value(name: str) -> Any:
        given = values.get(name)
        return getattr(defaults, name) if given is None or given == "" else given

    def whole(name: str, low: int, high: int) -> int:
        return _integer(name, value(name), low, high)

    def number(name: str, high: float = math.inf, hint: str | None = None) -> float:
        return _number(name, value(name), high=high, hint=hint)

    def rate(name: str) -> float | None:
        """An optional ceiling: unset, no ceiling."""
        return None if value(name) is None else number(name)

    return SourceConfig(
        base_url=validate_base_url(_text("base_url", values["base_url"])),
        api_key=checked_api_key(values["api_key"]),
        webhook_ids=_webhook_ids(values.get("webhook_ids")),
        jobs_path=checked_jobs_path(_text("jobs_path", value("jobs_path"))),
        max_workers=whole("max_workers", 1, 256),
        max_requests_per_second=rate("max_requests_per_second"),
        max_requests_per_second_per_host=rate("max_requests_per_second_per_host"),
        max_retire_share=number("max_retire_share", 1.0, hint="0.5 = 50%"),
        timeout_seconds=number("timeout_seconds", 600.0),
        max_attempts=whole("max_attempts", 1, 10_000),
        retry_budget_seconds=number("retry_budget_seconds", 86_400.0),
        job_refresh_slices=whole("job_refresh_slices", 1, settings.MAX_JOB_REFRESH_SLICES),
        delivery_overlap_seconds=whole("delivery_overlap_seconds", 0, 86_400),
    )


def checked_api_key(raw: Any) -> str:
    """The key without surrounding whitespace (a secrets file often ends in a newline); any
    other character outside printable ASCII is refused, never repeating the value."""
    name = setting_name("api_key")
    if not isinstance(raw, str):
        raise ConfigError(name, "must be a string")
    key = raw.strip()
    if key == settings.API_KEY_PLACEHOLDER:
        # starter secrets (`drone-sync init`, .dlt/secrets.toml.example) not edited: say that,
        # not that the placeholder's spaces are refused (checked before the value is registered
        # for redaction: the placeholder is no secret, and the message shows it)
        raise ConfigError(
            name,
            f"is still the placeholder {settings.API_KEY_PLACEHOLDER!r} of the starter secrets"
            " (drone-sync init, .dlt/secrets.toml.example); replace it with your read-only API"
            f' key in .dlt/secrets.toml (api_key = "..." under [{SECTION}]) or set'
            f" {env_name('api_key')}",
        )
    register_secret(raw)  # and its stripped forms: `key` among them
    if not key:
        raise ConfigError(name, f"is empty; put it in .dlt/secrets.toml or {env_name('api_key')}")
    if any(not ("!" <= char <= "~") for char in key):
        raise ConfigError(
            name,
            "contains a space, a control character or a non-ASCII character inside it"
            " (value not shown); copy the key again without them",
        )
    return key


def checked_jobs_path(path: str) -> str:
    """A path template under the base URL with exactly the `{project_id}` placeholder."""
    name = setting_name("jobs_path")
    expected = f"expected a path like {settings.JOBS_PATH_TEMPLATE}"
    if not path.startswith("/"):
        raise ConfigError(name, f"{_shown(path)} must start with /; {expected}")
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(path) if field is not None]
    except ValueError:
        raise ConfigError(name, f"{_shown(path)} has unbalanced braces; {expected}") from None
    if fields != ["project_id"]:
        raise ConfigError(
            name, f"{_shown(path)} must contain {{project_id}} once and no other placeholder"
        )
    return path


def validate_base_url(base_url: str) -> str:
    """Returns the base URL without a trailing slash; plain http is for loopback only. A bad
    value is shown only as scheme, host and path (it may be a key pasted in the wrong place)."""
    setting = setting_name("base_url")
    if not base_url:
        raise ConfigError(
            setting, "is empty; set it to the API's address, e.g. https://api.example.com"
        )
    parts = urlsplit(base_url)
    if not parts.scheme or not parts.hostname:
        raise ConfigError(
            setting,
            "is not an http(s) URL with a host (value not shown: it may be a secret pasted into"
            " the wrong setting); expected e.g. https://api.example.com",
        )
    host = parts.netloc.rpartition("@")[2]
    shown = repr(f"{parts.scheme}://{host}{parts.path}")
    if parts.scheme not in ("http", "https"):
        raise ConfigError(setting, f"{shown} is not an http(s) URL; expected https://...")
    if parts.username or parts.password:
        raise ConfigError(setting, "must not carry credentials; put the key in api_key")
    if parts.query or parts.fragment:
        raise ConfigError(setting, f"{shown} must not carry a query string or fragment")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            setting, f"{shown}: plain http:// is allowed for loopback hosts only; use https://"
        )
    if parts.path.rstrip("/").endswith(settings.API_PREFIX):
        raise ConfigError(
            setting,
            f"{shown} must not end with {settings.API_PREFIX}: paths under it start with /v1",
        )
    return base_url.rstrip("/")


def is_loopback_host(host: str) -> bool:
    """Whether plain http to `host` stays on this machine (the only place it is allowed)."""
    if host in settings.LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _webhook_ids(raw: Any) -> tuple[str, ...] | None:
    name = setting_name("webhook_ids")
    expected = (
        'expected a list of webhook ids: webhook_ids = ["wh_1"] in TOML,'
        f" {env_name('webhook_ids')}='[\"wh_1\"]' in the environment"
    )
    if raw is None or raw == "":
        return None
    parsed = raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            raise ConfigError(name, f"{_shown(raw)} is not a list; {expected}") from None
    if not isinstance(parsed, list | tuple) or not all(isinstance(i, str) and i for i in parsed):
        raise ConfigError(name, f"{_shown(raw)} is not a list of id strings; {expected}")
    return tuple(parsed) if parsed else None


def _text(name: str, raw: Any) -> str:
    if not isinstance(raw, str):
        raise ConfigError(setting_name(name), f"{_shown(raw)} is not a string")
    return raw


def _integer(name: str, raw: Any, low: int, high: int) -> int:
    expected = f"expected a whole number from {low} to {high}"
    if isinstance(raw, bool):
        raise ConfigError(setting_name(name), f"{_shown(raw)} is not a number; {expected}")
    if isinstance(raw, int):
        number = raw
    elif isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
        number = int(raw.strip())
    else:
        raise ConfigError(setting_name(name), f"{_shown(raw)} is not a whole number; {expected}")
    if not low <= number <= high:
        raise ConfigError(setting_name(name), f"{number} is out of range; {expected}")
    return number


def _number(name: str, raw: Any, *, high: float, hint: str | None) -> float:
    """A finite number with 0 < value <= high (every such setting is a positive amount)."""
    upper = "" if math.isinf(high) else f" and at most {high:g}"
    expected = f"expected a number above 0{upper}" + (f" ({hint})" if hint else "")
    if isinstance(raw, bool):
        raise ConfigError(setting_name(name), f"{_shown(raw)} is not a number; {expected}")
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(
            setting_name(name), f"{_shown(raw)} is not a number; {expected}"
        ) from None
    if not math.isfinite(number) or not 0 < number <= high:
        raise ConfigError(setting_name(name), f"{_shown(raw)} is out of range; {expected}")
    return number


def _shown(raw: Any) -> str:
    """A bad value as it may be shown (never the key's: that has its own messages)."""
    text = repr(raw)
    return text if len(text) <= 80 else text[:77] + "..."
