"""The one way an observer sends JSON to a URL a user configured (a Slack-compatible hook, an
OpenLineage endpoint), and reads such settings.

Why one place: the rules are the same for every target and must not drift. Plain `http://`
only to loopback (anything else must be `https://`, so a hook's token never crosses a network
in clear text), one attempt with a bounded timeout (a monitoring outage must not hold a run,
and a retry loop against a broken receiver helps nobody), no redirects and no proxies from the
environment (the request goes where the user said), and a failure is one warning line, never
an exception: delivering news about a run must not change the run's outcome.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

import dlt
import httpx

from drone_ops_sync.sources.drone_ops import ConfigError
from drone_ops_sync.sources.drone_ops.internal import is_loopback_host, redact, register_secret

SEND_TIMEOUT_SECONDS = 5.0
"""Connect, read and write, each; one attempt."""

logger = logging.getLogger("drone_sync.observe")


def read_setting(key: str, *, secret: bool = False) -> str | None:
    """A dlt setting (environment, `.dlt/secrets.toml`, `.dlt/config.toml`) as text, or None;
    a secret one is registered for redaction before anything could print it."""
    value: Any = dlt.secrets.get(key) if secret else None
    if value is None:
        value = dlt.config.get(key)
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    if secret:
        register_secret(text)
    return text


def checked_url(setting: str, url: str) -> str:
    """`url` if it is http(s) with a host, and plain http only to loopback; else a
    `ConfigError` naming the setting (never showing a secret URL's value)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(setting, "is not an http(s) URL; expected https://host/path")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            setting,
            f"plain http is allowed only to loopback, not to {parts.hostname}; use https://",
        )
    return url


def post_json(
    url: str, payload: dict[str, Any], *, what: str, headers: dict[str, str] | None = None
) -> bool:
    """POSTs `payload` once; on any failure logs one warning naming `what` (never the URL,
    which may carry a token) and returns False."""
    try:
        with httpx.Client(
            timeout=SEND_TIMEOUT_SECONDS, follow_redirects=False, trust_env=False
        ) as client:
            response = client.post(url, json=payload, headers=headers)
    except httpx.HTTPError as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        logger.warning("%s not delivered: %s", what, redact(reason))
        return False
    if not response.is_success:
        logger.warning(
            "%s not delivered: the receiver answered HTTP %s", what, response.status_code
        )
        return False
    return True
