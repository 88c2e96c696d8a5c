"""OpenLineage run events for `drone-sync run`: START when the run has its id, then COMPLETE,
FAIL or ABORT (interrupted) when the command ends.

Why plain JSON over httpx and not the openlineage-python client: the events are a few fields,
and the client brings a dependency tree for them. The settings are OpenLineage's own
environment variables, so a team that runs Marquez or DataHub has them set already
(docs/operations.md, "OpenLineage", lists them and the events); no event carries a secret.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from drone_ops_sync.sources.drone_ops import SyncReport, TableResult
from drone_ops_sync.sources.drone_ops.internal import ENTITIES, redact, register_secret

from .transport import checked_url, logger, post_json

PRODUCER = "https://github.com/drone-ops/drone-ops-sync"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
OUTPUT_STATISTICS_SCHEMA = (
    "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json"
)
ROWS_FACET_SCHEMA = f"{PRODUCER}/blob/main/docs/operations.md#openlineage"
DEFAULT_ENDPOINT = "api/v1/lineage"
DEFAULT_NAMESPACE = "drone-ops-sync"
ROW_FACET_FIELDS = ("status", "rows_seen", "new", "changed", "retired")  # drone_sync_rows


@dataclass(frozen=True)
class LineageTargets:
    """Where events go: an HTTP endpoint, a file, or both."""

    url: str | None = None
    file: Path | None = None
    api_key: str | None = None
    namespace: str = DEFAULT_NAMESPACE


def lineage_targets(environ: dict[str, str] | None = None) -> LineageTargets | None:
    """The configured targets (checked like every other URL), or None when none is set."""
    env = dict(os.environ if environ is None else environ)
    base = env.get("OPENLINEAGE_URL", "").strip()
    file = env.get("OPENLINEAGE_FILE", "").strip()
    if not base and not file:
        return None
    url = None
    if base:
        endpoint = env.get("OPENLINEAGE_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
        url = checked_url("OPENLINEAGE_URL", f"{base.rstrip('/')}/{endpoint.lstrip('/')}")
    api_key = env.get("OPENLINEAGE_API_KEY", "").strip() or None
    if api_key:
        register_secret(api_key)
    namespace = env.get("OPENLINEAGE_NAMESPACE", "").strip() or DEFAULT_NAMESPACE
    return LineageTargets(url, Path(file) if file else None, api_key, namespace)


@dataclass
class LineageEmitter:
    """One run's events; a `sync.RunObserver` for START, `finish` for the end."""

    targets: LineageTargets
    api_url: str
    warehouse_namespace: str
    dataset: str
    run_uuid: str | None = None
    tables: list[str] = field(default_factory=list)

    def run_started(self, report: SyncReport, tables: Sequence[str]) -> None:
        # the run id is ours (time-sortable); OpenLineage wants a UUID, derived from it
        self.run_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"drone-sync:{report.run_id}"))
        self.tables = list(tables)
        self._send(self._event("START", report.run_id, {}))

    def table_finished(self, result: TableResult) -> None:
        """Tables are reported together in the final event."""

    def finish(self, summary: dict[str, Any]) -> None:
        """COMPLETE, FAIL or ABORT for a run that started (a run refused before it had an id
        has no lineage)."""
        if self.run_uuid is None:
            return
        event_type = {"success": "COMPLETE", "interrupted": "ABORT"}.get(
            str(summary.get("outcome")), "FAIL"
        )
        self._send(self._event(event_type, summary.get("run_id"), summary))

    def _event(self, event_type: str, run_id: Any, summary: dict[str, Any]) -> dict[str, Any]:
        rows: dict[str, dict[str, Any]] = summary.get("tables") or {}
        run_facets: dict[str, Any] = {
            "drone_sync": self._facet(run_id=run_id, exit_code=summary.get("exit_code"))
        }
        if event_type in ("FAIL", "ABORT"):
            run_facets["errorMessage"] = {
                **self._facet(),
                "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json",
                "message": str(summary.get("error") or summary.get("outcome")),
                "programmingLanguage": "python",
            }
        return {
            "eventType": event_type,
            "eventTime": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "producer": PRODUCER,
            "schemaURL": SCHEMA_URL,
            "run": {"runId": self.run_uuid, "facets": run_facets},
            "job": {"namespace": self.targets.namespace, "name": f"drone_sync.{self.dataset}"},
            "inputs": [
                {"namespace": self.api_url, "name": path}
                for path in dict.fromkeys(
                    ENTITIES[name].list_path for name in self.tables if ENTITIES[name].list_path
                )
            ],
            "outputs": [self._output(name, rows.get(name)) for name in self.tables],
        }

    def _output(self, table: str, row: dict[str, Any] | None) -> dict[str, Any]:
        output: dict[str, Any] = {
            "namespace": self.warehouse_namespace,
            "name": f"{self.dataset}.{table}",
        }
        if row is not None:
            written = int(row["new"]) + int(row["changed"]) + int(row["retired"])
            output["outputFacets"] = {
                "outputStatistics": {
                    **self._facet(),
                    "_schemaURL": OUTPUT_STATISTICS_SCHEMA,
                    "rowCount": written,
                },
                "drone_sync_rows": self._facet(**{key: row[key] for key in ROW_FACET_FIELDS}),
            }
        return output

    @staticmethod
    def _facet(**fields: Any) -> dict[str, Any]:
        return {"_producer": PRODUCER, "_schemaURL": ROWS_FACET_SCHEMA, **fields}

    def _send(self, event: dict[str, Any]) -> None:
        what = f"OpenLineage {event['eventType']} event"
        body = json.loads(redact(json.dumps(event, default=str)))
        if self.targets.url is not None:
            headers = {"Authorization": f"Bearer {self.targets.api_key}"}
            post_json(
                self.targets.url, body, what=what, headers=headers if self.targets.api_key else None
            )
        if self.targets.file is not None:
            try:
                with self.targets.file.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(body) + "\n")
            except OSError as exc:
                logger.warning("%s not written to %s: %s", what, self.targets.file, exc.strerror)


def api_namespace(base_url: str) -> str:
    """The API as a lineage namespace: scheme, host and port, no path or credentials."""
    parts = urlsplit(base_url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"
