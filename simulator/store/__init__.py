"""The simulated workspace: in-memory state and the domain operations of the API.

`Store` builds the generated `Workspace` (rows, indexes, caches, the lock) and one collaborator
per resource over it, each in its own module:

    state.py         Workspace, Options: the rows and what every operation shares
    keyset.py        keyset pages, cursors and cached row encodings
    projects.py      Projects        jobs.py      Jobs (and pilot assignments)
    job_types.py     JobTypes        team.py      Team
    webhooks.py      Webhooks        delivery_log.py  DeliveryLog (payloads, log entries)
    webhook_log.py   WebhookLog: one webhook's log entries (generated ones as columns)
    churn.py         Churn: deterministic background change for the admin API
    edits.py         Edits: one record changed as in the dashboard, for the admin API

Every operation takes the workspace lock, so the event worker thread, admin churn and request
handlers can run concurrently. List operations return ready-to-send JSON bytes.
"""

from __future__ import annotations

from .churn import Churn, ChurnPlan
from .delivery_log import DeliveryLog
from .edits import Edits
from .job_types import JobTypes
from .jobs import Jobs
from .keyset import PAGE_SIZE, KeyIndex, decode_cursor, encode_cursor, encode_row
from .projects import Projects
from .state import Options, Workspace
from .team import Team
from .webhooks import Webhooks

__all__ = [
    "PAGE_SIZE",
    "KeyIndex",
    "Options",
    "Store",
    "Workspace",
    "decode_cursor",
    "encode_cursor",
    "encode_row",
]


class Store:
    """The workspace and its operations, one collaborator per resource."""

    def __init__(self, options: Options, full_key_label: str = "Full access key") -> None:
        self.state = state = Workspace(options, full_key_label)
        self.projects = Projects(state)
        self.jobs = Jobs(state)
        self.job_types = JobTypes(state)
        self.team = Team(state)
        self.webhooks = Webhooks(state)
        self.delivery_log = DeliveryLog(state)
        self._churn = Churn(state, self.projects, self.jobs, self.delivery_log)
        self.edits = Edits(state)

    def churn(
        self,
        seed: int = 0,
        update_fraction: float = 0.01,
        delete_fraction: float = 0.001,
        new_deliveries_per_webhook: int = 0,
    ) -> dict[str, int]:
        """Deterministic background change, as if edited in the dashboard (emits no events)."""
        plan = ChurnPlan(seed, update_fraction, delete_fraction, new_deliveries_per_webhook)
        return self._churn.run(plan)

    def counts(self) -> dict[str, int]:
        """Rows per list (and active projects), for tests and benchmarks."""
        return self.state.counts()

    def example_ids(self) -> dict[str, str]:
        """Ids of real generated rows, used as OpenAPI examples."""
        return self.state.example_ids()
