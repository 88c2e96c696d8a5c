"""Alerts: a failed `drone-sync run` or a stale warehouse posts one message to a Slack-compatible
incoming webhook.

Why dlt's `runtime.slack_incoming_hook` (env `RUNTIME__SLACK_INCOMING_HOOK`): a dlt user has it
configured already, for dlt's own `send_slack_message`. The message is `{"text": ...}`, which
Slack, Mattermost, Rocket.Chat and Teams' Slack-compatible connectors all read. It names the
warehouse, the run id, the tables that failed and the root cause, and goes through `redact` as a
whole: the key or a password quoted by some library's error never reaches the chat. The hook
itself is a secret (its path is the token), so it is registered for redaction too.
"""

from __future__ import annotations

from typing import Any

from drone_ops_sync.sources.drone_ops.internal import FAILED_STATUSES, redact

from .transport import checked_url, post_json, read_setting

HOOK_SETTING = "runtime.slack_incoming_hook"


def alert_hook() -> str | None:
    """The configured hook, checked (https, or http to loopback); None when not set."""
    hook = read_setting(HOOK_SETTING, secret=True)
    return checked_url(HOOK_SETTING, hook) if hook is not None else None


def send_alert(hook: str, text: str) -> bool:
    """Posts the alert once; a failure is one warning line (`transport.post_json`)."""
    return post_json(hook, {"text": redact(text)}, what="alert")


def run_failed_text(warehouse: str, summary: dict[str, Any]) -> str:
    """The alert for a `drone-sync run` that exited non-zero, from its final summary."""
    tables: dict[str, dict[str, Any]] = summary.get("tables") or {}
    failed = [name for name, row in tables.items() if row.get("status") in FAILED_STATUSES]
    lines = [
        f"drone-sync run failed on {warehouse}: {summary.get('outcome')}"
        f" (exit {summary.get('exit_code')})",
        f"run id: {summary.get('run_id') or 'none (the run did not start)'}",
    ]
    if failed:
        lines.append(f"failed tables: {', '.join(failed)}")
    lines.append(f"cause: {summary.get('error') or 'unknown'}")
    return "\n".join(lines)
