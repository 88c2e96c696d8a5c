"""What one `drone-sync run` tells the world besides its own output: an alert when it fails,
the metrics textfile, the lineage events.

Why one object for the three: they are configured together (read and checked before the run
changes anything, like every other setting), fed by the same observer calls and the same final
summary, and they share one rule: none of them may change the run's exit code or crash it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drone_ops_sync.sources.drone_ops import SourceConfig, SyncReport, TableResult
from drone_ops_sync.sources.drone_ops.internal import redact

from ..run.credentials import destination_credentials
from ..run.sync import RunObserver
from ..run.target import Target
from .alerts import alert_hook, run_failed_text, send_alert
from .lineage import LineageEmitter, api_namespace, lineage_targets
from .metrics import metrics_path, write_metrics
from .status import describe_warehouse

logger = logging.getLogger("drone_sync.observe")


@dataclass
class Observers:
    """Several `RunObserver`s as one: `Session.sync` takes one."""

    observers: list[RunObserver] = field(default_factory=list)

    def run_started(self, report: SyncReport, tables: Sequence[str]) -> None:
        for observer in self.observers:
            observer.run_started(report, tables)

    def table_finished(self, result: TableResult) -> None:
        for observer in self.observers:
            observer.table_finished(result)


@dataclass
class RunWatch:
    """Alert, metrics and lineage for one `drone-sync run`; `configure` first, `finish` last."""

    warehouse: str | None = None
    hook: str | None = None
    metrics: Path | None = None
    lineage: LineageEmitter | None = None
    configured: bool = False

    def configure(self, target: Target, metrics_flag: Path | None) -> None:
        """Reads and checks the alert hook and the metrics file (raises `ConfigError`). From
        here on, a failed command is alerted."""
        self.warehouse = describe_warehouse(target)
        self.hook = alert_hook()
        self.configured = True
        self.metrics = metrics_path(metrics_flag)

    def watch_run(self, target: Target, config: SourceConfig, first: RunObserver) -> Observers:
        """The observers of the run: `first` (the output), then lineage when configured."""
        targets = lineage_targets()
        observers = Observers([first])
        if targets is not None:
            self.lineage = LineageEmitter(
                targets,
                api_namespace(config.base_url),
                _warehouse_namespace(target),
                target.dataset,
            )
            observers.observers.append(self.lineage)
        return observers

    def finish(self, summary: dict[str, Any] | None) -> None:
        """After the command: metrics (when the sync ran), lineage's end event, the alert
        (when the command failed and the hook could be read). Never raises."""
        if summary is None or not self.configured:
            return
        if self.metrics is not None and summary.get("tables"):
            try:
                write_metrics(self.metrics, summary)
            except OSError as exc:
                logger.warning("metrics not written to %s: %s", self.metrics, exc.strerror or exc)
        if self.lineage is not None:
            self.lineage.finish(summary)
        if summary.get("exit_code") != 0 and self.hook is not None and not _told(summary):
            send_alert(self.hook, run_failed_text(self.warehouse or "?", summary))


def _told(summary: dict[str, Any]) -> bool:
    """A fleet run whose only failures are workspaces: each workspace's own process alerted
    its failure with its cause, so the fleet adds no second message for the same failures
    (its models and snapshot, built after, alert as usual)."""
    workspaces = summary.get("workspaces")
    models = summary.get("models")
    models_ok = models is None or bool(models.get("ok"))
    return (
        bool(workspaces)
        and models_ok
        and str(summary.get("error", "")).startswith("workspaces failed")
    )


def _warehouse_namespace(target: Target) -> str:
    """The warehouse as a lineage namespace (OpenLineage's naming: `duckdb://<file>`,
    `postgres://host:port`)."""
    if target.destination == "duckdb":
        return f"duckdb://{target.resolved_database().absolute()}"
    if target.destination == "postgres":
        credentials = destination_credentials("postgres")
        return redact(f"postgres://{credentials.host}:{credentials.port}")
    return f"{target.destination}://"
