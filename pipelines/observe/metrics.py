"""A Prometheus textfile after each `drone-sync run`, for node_exporter's textfile collector.

Why a textfile and not an HTTP endpoint: a run is a short batch job, gone before any scrape;
node_exporter reads `*.prom` files from its `--collector.textfile.directory` on every scrape.
The file is written under a temporary name that does not end in `.prom` and renamed over the
old one, so the collector never reads half a file. Every value is the last run's, so every
metric is a gauge, named after Prometheus' conventions: `drone_sync_last_run_*` (no `_total`,
which promises a counter that only grows; a per-run value starts afresh each run), units as a
base-unit suffix after what is measured (`..._duration_seconds`).
`drone_sync_last_success_timestamp_seconds` keeps, for a table that failed or was not synced
this run, the value the previous file held, so `time() - that` is a table's real staleness.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from drone_ops_sync.sources.drone_ops import ConfigError

from ..defaults import METRICS_FILE_KEY
from ..run.destination import check_creatable
from ..run.durable import replace_durably
from .transport import read_setting

ROW_KINDS = ("new", "changed", "retired")
_LAST_SUCCESS = "drone_sync_last_success_timestamp_seconds"
_LAST_SUCCESS_LINE = re.compile(
    rf'^{_LAST_SUCCESS}\{{table="(?P<table>(?:[^"\\]|\\.)*)"\}} (?P<value>[0-9.eE+-]+)$'
)
# the text format's label escapes, both ways
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}
_UNESCAPE = re.compile(r"\\(.)")
_ROWS = "drone_sync_last_run_rows"
_REQUESTS = "drone_sync_last_run_requests"
_RETRIES = "drone_sync_last_run_retries"
_DURATION = "drone_sync_last_run_duration_seconds"
_OK = "drone_sync_last_run_ok"
_HELP = {
    _ROWS: "Rows the last run wrote per table, by kind (new, changed, retired).",
    _REQUESTS: "API requests the last run made, per table.",
    _RETRIES: "API retries the last run made, per table (counted in the requests too).",
    _DURATION: "Wall-clock duration of the last drone-sync run, in seconds.",
    _LAST_SUCCESS: "Unix time of the last run that loaded the table successfully.",
    _OK: "1 if the last run exited 0, else 0.",
}


def metrics_path(flag: Path | None) -> Path | None:
    """Where to write the textfile: `--metrics-file`, else `runtime.metrics_file`; checked
    now (a `.prom` name in a folder that can be written), before the run changes anything."""
    setting = "--metrics-file" if flag is not None else METRICS_FILE_KEY
    configured = read_setting(METRICS_FILE_KEY) if flag is None else None
    path = flag if flag is not None else Path(configured) if configured else None
    if path is None:
        return None
    if path.suffix != ".prom":
        raise ConfigError(
            setting, f"{path} does not end in .prom; node_exporter reads only *.prom files"
        )
    if path.is_dir():
        raise ConfigError(setting, f"{path} is a folder; give the path of a .prom file")
    check_creatable(setting, path)
    return path


def previous_successes(path: Path) -> dict[str, float]:
    """The last-success timestamps a previous file held, per table (none if unreadable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    found = (_LAST_SUCCESS_LINE.match(line) for line in text.splitlines())
    return {_unescape(match["table"]): float(match["value"]) for match in found if match}


def _unescape(value: str) -> str:
    return _UNESCAPE.sub(lambda m: "\n" if m[1] == "n" else m[1], value)


def render(summary: dict[str, Any], previous: dict[str, float], now: float) -> str:
    """The textfile for one run's final summary (`Output.summary`)."""
    tables: dict[str, dict[str, Any]] = summary.get("tables") or {}
    successes = dict(previous)
    for name, row in tables.items():
        if row.get("status") == "success":
            successes[name] = now
    samples: dict[str, list[tuple[dict[str, str], float]]] = {name: [] for name in _HELP}
    for name, row in tables.items():
        for kind in ROW_KINDS:
            samples[_ROWS].append(({"table": name, "kind": kind}, row[kind]))
        samples[_REQUESTS].append(({"table": name}, row["requests"]))
        samples[_RETRIES].append(({"table": name}, row["retries"]))
    samples[_DURATION].append(({}, float(summary.get("seconds") or 0.0)))
    for name in sorted(successes):
        samples[_LAST_SUCCESS].append(({"table": name}, successes[name]))
    samples[_OK].append(({}, 1.0 if summary.get("exit_code") == 0 else 0.0))
    lines: list[str] = []
    for metric, values in samples.items():
        lines += [f"# HELP {metric} {_HELP[metric]}", f"# TYPE {metric} gauge"]
        lines += [f"{metric}{_labels(labels)} {_number(value)}" for labels, value in values]
    return "\n".join(lines) + "\n"


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    escaped = (
        f'{key}="{"".join(_ESCAPES.get(char, char) for char in value)}"'
        for key, value in labels.items()
    )
    return "{" + ",".join(escaped) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_metrics(path: Path, summary: dict[str, Any]) -> None:
    """Writes the textfile atomically (`replace_durably`). Raises OSError."""
    text = render(summary, previous_successes(path), time.time())
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_durably(path, text)
