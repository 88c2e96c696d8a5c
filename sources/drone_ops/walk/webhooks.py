"""The webhooks half of the walk: the webhook list, then each webhook's delivery log.

A log is one long chain of cursor pages, newest first, walked until it reaches what the
warehouse holds (its `DeliveryMark`); its entries may load in waves while the chains walk.
A webhook's mark moves only when its chain reached known ground and everything it walked was
loaded (`completed_marks`), so a failed chain leaves no gap.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import orjson

from .. import settings
from ..exceptions import DroneOpsError, NotFoundError
from ..http import page_items
from ..tables.breaches import Issue
from ..tables.entities import WEBHOOK_DELIVERIES, WEBHOOKS, WEBHOOKS_TABLE
from ..tables.lines import LineBuffer
from ..tables.payloads import delivery_table
from .context import WalkContext


class WebhookWalker:
    """The webhook list, then each webhook's delivery-log chain, over the shared context."""

    def __init__(self, context: WalkContext) -> None:
        self.context = context
        self.completed_marks: dict[str, int] = {}
        """Per webhook whose chain reached known ground: the newest entry it walked."""
        self.failures: dict[str, DroneOpsError] = {}
        """Per webhook whose chain failed: why (its entries are not loadable)."""

    def walk_webhooks(self) -> None:
        webhooks = self.context.tables["webhooks"]
        ids = self.context.plan.webhook_ids
        configured = ids is not None
        if ids is None:
            try:
                found: list[str] = []
                path, items_key = str(WEBHOOKS_TABLE.list_path), str(WEBHOOKS_TABLE.items_key)
                for page in self.context.client.paginate(
                    path,
                    stats=self.context.stats["webhooks"],
                    not_found_fix=(
                        "this API has no webhook list: set"
                        f" {settings.CONFIG_SECTION}.webhook_ids to the ids to sync"
                    ),
                    items_key=items_key,
                    stop=lambda: webhooks.failed,
                ):
                    found.extend(str(r["id"]) for r in page_items(page, items_key, path))
                if webhooks.error is not None:
                    # stopped early: a partial list would start partial chains
                    raise webhooks.error
                ids = tuple(dict.fromkeys(found))
            except DroneOpsError as exc:
                webhooks.fail(exc)
                self.context.tables["webhook_deliveries"].fail(exc)
                return
        for webhook_id in ids:
            self.context.submit(WEBHOOKS, self._walk_webhook, webhook_id, configured)

    def _walk_webhook(self, webhook_id: str, configured: bool) -> None:
        """Walks one webhook's chain to known ground; a chain stopped because
        `webhook_deliveries` failed is not complete, so its mark does not move."""
        webhooks = self.context.tables["webhooks"]
        deliveries = self.context.tables["webhook_deliveries"]
        path = str(WEBHOOK_DELIVERIES.list_path).format(webhook_id=webhook_id)
        items_key = str(WEBHOOK_DELIVERIES.items_key)
        mark = self.context.plan.delivery_marks.get(webhook_id)
        fix = (
            f"webhook {webhook_id!r} is listed in {settings.CONFIG_SECTION}.webhook_ids but the"
            " API does not know it: remove it from the list or correct the id"
            if configured
            else f"webhook {webhook_id!r} was deleted during the walk; the next run retires it"
        )
        pending = LineBuffer()
        spills: list[Future[None]] = []
        newest = mark.newest_ms if mark is not None else None
        try:
            for number, page in enumerate(
                self.context.client.paginate(
                    path,
                    stats=self.context.stats["webhook_deliveries"],
                    not_found_fix=fix,
                    critical=True,
                    items_key=items_key,
                    stop=lambda: deliveries.failed,
                )
            ):
                self.context.check_cancelled()
                if number == 0:
                    self._offer_webhook(page, path)
                reached_known = False
                for entry in page_items(page, items_key, path):
                    created = entry.get("created")
                    if isinstance(created, int) and not isinstance(created, bool):
                        newest = created if newest is None else max(newest, created)
                    if mark is not None and isinstance(created, int):
                        if created < mark.stop_before_ms:
                            reached_known = True
                            break
                        if str(entry.get("id")) in mark.known_ids:
                            continue
                    # kept as its JSON line: a fraction of the dict's memory, typed outside the GIL
                    pending.append(orjson.dumps(entry))
                if len(pending) >= settings.ARROW_BATCH_ROWS:
                    # typing happens beside the walk: this thread goes straight on to the next
                    # page of a chain that nothing else can shorten
                    spills.append(self._spill(pending, webhook_id))
                    pending = LineBuffer()
                if reached_known:
                    break
            if pending:
                spills.append(self._spill(pending, webhook_id))
            for future in spills:
                future.result()
            if deliveries.failed:
                return
        except DroneOpsError as exc:
            if configured or not isinstance(exc, NotFoundError):
                webhooks.fail(exc)
            self.failures[webhook_id] = exc
            return
        except Exception as exc:
            error = DroneOpsError(f"webhook {webhook_id} walk failed: {type(exc).__name__}: {exc}")
            webhooks.fail(error)
            self.failures[webhook_id] = error
            return
        if newest is not None:
            # the mark may move here only if every entry walked is loaded: the pipeline
            # records it after the run's last delivery load succeeded
            self.completed_marks[webhook_id] = newest

    def _offer_webhook(self, page: dict[str, Any], path: str) -> None:
        """The webhook's own row, from the first page of its delivery log."""
        record = page.get("webhook")
        if not isinstance(record, dict) or "id" not in record:
            raise DroneOpsError(f"GET {path} returned no webhook object")
        self.context.tables["webhooks"].offer([record])
        self.context.creators.remember(record.get("created_by"), record.get("created"))
        self.context.report("webhooks", 1)

    def _spill(self, lines: LineBuffer, webhook_id: str) -> Future[None]:
        assert self.context.spill_pool is not None, "chains walk only while the walk runs"
        return self.context.spill_pool.submit(self._spill_deliveries, lines, webhook_id)

    def _spill_deliveries(self, lines: LineBuffer, webhook_id: str) -> None:
        """Types a batch and makes it loadable at once (the next wave may load it)."""
        deliveries = self.context.tables["webhook_deliveries"]
        issues: list[Issue] = []
        typed = delivery_table(
            WEBHOOK_DELIVERIES.contract, lines, webhook_id, self.context.run_id, issues
        )
        deliveries.keep(typed, issues, rows_seen=len(lines))
        self.context.report("webhook_deliveries", len(lines))
