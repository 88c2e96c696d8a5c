"""What a run's walk must read, decided before the first request from the tables it loads,
the settings and what the warehouse already holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import settings
from ..compare.changes import held_hashes
from ..config import SourceConfig
from ..known import DeliveryMark, KnownState
from ..tables.entities import ENTITIES, Entity
from .rolling import JobSlice, job_slice


@dataclass
class WalkPlan:
    """Which parts of the workspace a run needs, and how to reach them."""

    tables: frozenset[str] = frozenset()
    """The tables the run loads; the walk reads what they are made of."""
    jobs_path: str = settings.JOBS_PATH_TEMPLATE
    webhook_ids: tuple[str, ...] | None = None
    delivery_marks: dict[str, DeliveryMark] = field(default_factory=dict)
    held_hashes: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per entity table, the row hashes the first look counts as held (`changes.held_hashes`)."""
    job_slice: JobSlice | None = None
    """(slice, slices) for a rolling job refresh; None walks every project's jobs."""

    @classmethod
    def for_run(cls, config: SourceConfig, tables: tuple[str, ...], known: KnownState) -> WalkPlan:
        return cls(
            tables=frozenset(tables),
            jobs_path=config.jobs_path,
            webhook_ids=config.webhook_ids,
            delivery_marks=known.delivery_marks,
            held_hashes={table: held_hashes(current) for table, current in known.current.items()},
            job_slice=job_slice(config.job_refresh_slices, known),
        )

    def walks(self, entity: Entity) -> bool:
        """Whether the run needs this table's list: it loads the table, or a table listed under
        it (jobs under projects), or one made of it (users of projects' and webhooks' creators)."""
        if entity.table in self.tables:
            return True
        return any(
            ENTITIES[name].parent == entity.table or entity.table in ENTITIES[name].made_from
            for name in self.tables
        )
