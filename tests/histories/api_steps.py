"""The API's side of a history: what people change between syncs, through the API's own writes
(projects created, renamed, given a status, dates, archived and restored, deleted and
re-created under the same name; jobs created, changed and deleted under a project; job types
created; webhooks renamed) and, where the API has no write, through the simulator's admin
edits (team members added, changed, removed; job types renamed and removed; a record's own
`created`/`updated` set to an edge of the clock) and churn (new delivery-log entries).

Every value is one the spec allows (`values.py`). A step changes the API only; the warehouse
must not move, which the invariant after it checks like any other.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from drone_ops_sync.sources.drone_ops.internal import settings

from .machine import HistoryFrame
from .values import date_range, job_start, split_pair, text, timestamp_ms

STATUSES = st.sampled_from(settings.STATUSES)
CHOSEN_IDS = st.none() | st.sampled_from(("a", "bc", "ab", "c", "a-b", "A"))
"""Ids a dashboard edit gives a new member or job type: some concatenate alike, some differ
only in case."""


def _status(status: str, reason: str) -> dict[str, Any]:
    return {"status": status, "other_status_reason": reason if status == "other" else None}


class ApiSteps(HistoryFrame):
    def ids(self, table: str, **where: Any) -> list[str]:
        return [
            i
            for i, record in self.api.get(table, {}).items()
            if all(record.get(k) == v for k, v in where.items())
        ]

    def pick(self, data: st.DataObject, table: str, **where: Any) -> dict[str, Any]:
        return self.api[table][data.draw(st.sampled_from(self.ids(table, **where)), label=table)]

    def changed(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One API write, then the deliveries it sent caught and the listing read again."""
        answer = self.world.write(method, path, body)
        self.catch()
        self.look()
        return answer

    def edited(self, list_name: str, record_id: str | None, **kwargs: Any) -> None:
        self.world.sim.edit(list_name, record_id, **kwargs)
        self.look()

    # -- projects -------------------------------------------------------------------------------
    @rule(pair=split_pair(100, 1000), status=STATUSES, reason=text(200), dates=date_range())
    def create_project(
        self, pair: tuple[str, str], status: str, reason: str, dates: tuple[str, str | None]
    ) -> None:
        body = {"name": pair[0], "description": pair[1], "start_date": dates[0]}
        self.changed(
            "POST", "/v1/projects", {**body, "end_date": dates[1], **_status(status, reason)}
        )

    @precondition(lambda self: self.ids("projects"))
    @rule(data=st.data(), pair=split_pair(100, 1000))
    def rename_project(self, data: st.DataObject, pair: tuple[str, str]) -> None:
        project = self.pick(data, "projects")
        body = {"name": pair[0], "description": pair[1]}
        self.changed("PATCH", f"/v1/projects/{project['id']}", body)

    @precondition(lambda self: self.ids("projects"))
    @rule(data=st.data(), status=STATUSES, reason=text(200), dates=st.none() | date_range())
    def change_project_status(
        self, data: st.DataObject, status: str, reason: str, dates: tuple[str, str | None] | None
    ) -> None:
        project = self.pick(data, "projects")
        body = _status(status, reason)
        if dates is not None:
            body.update(start_date=dates[0], end_date=dates[1])
        self.changed("PATCH", f"/v1/projects/{project['id']}", body)

    @precondition(lambda self: self.ids("projects"))
    @rule(data=st.data())
    def archive_or_restore(self, data: st.DataObject) -> None:
        project = self.pick(data, "projects")
        body = {"archived": not project["archived"]}
        self.changed("POST", f"/v1/projects/{project['id']}/archive", body)

    @precondition(lambda self: self.ids("projects"))
    @rule(data=st.data(), again=st.booleans())
    def delete_project(self, data: st.DataObject, again: bool) -> None:
        """Deleted, and maybe created again under the same name (a new id)."""
        project = self.pick(data, "projects")
        self.changed("DELETE", f"/v1/projects/{project['id']}")
        if again:
            fields = ("name", "description", "start_date", "end_date", "status")
            body = {k: project[k] for k in fields}
            body["other_status_reason"] = project["other_status_reason"]
            self.changed("POST", "/v1/projects", body)

    # -- jobs -----------------------------------------------------------------------------------
    @precondition(lambda self: self.ids("projects"))
    @rule(
        data=st.data(),
        name=text(100),
        description=st.none() | text(1000),
        status=STATUSES,
        reason=text(200),
        priority=st.sampled_from(settings.PRIORITIES),
        recurring=st.booleans(),
        start=job_start(),
    )
    def create_job(
        self,
        data: st.DataObject,
        name: str,
        description: str | None,
        status: str,
        reason: str,
        priority: str,
        recurring: bool,
        start: str,
    ) -> None:
        project = self.pick(data, "projects")
        job_type = data.draw(st.sampled_from(sorted(self.api["job_types"])), label="type")
        body = {
            "name": name,
            "description": description,
            "type": job_type,
            "job_pattern": "recurring" if recurring else "one_time",
            "start_date": start,
            "priority": priority,
            **_status(status, reason),
        }
        self.changed("POST", f"/v1/projects/{project['id']}/jobs", body)

    @precondition(lambda self: self.ids("jobs"))
    @rule(
        data=st.data(),
        status=STATUSES,
        reason=text(200),
        priority=st.sampled_from(settings.PRIORITIES),
    )
    def change_job(self, data: st.DataObject, status: str, reason: str, priority: str) -> None:
        job = self.pick(data, "jobs")
        path = f"/v1/projects/{job['project_id']}/jobs/{job['id']}"
        self.changed("PATCH", path, {"priority": priority, **_status(status, reason)})

    @precondition(lambda self: self.ids("jobs"))
    @rule(data=st.data())
    def delete_job(self, data: st.DataObject) -> None:
        job = self.pick(data, "jobs")
        self.changed("DELETE", f"/v1/projects/{job['project_id']}/jobs/{job['id']}")

    # -- team, job types, webhooks ----------------------------------------------------------------
    @rule(
        data=st.data(),
        chosen=CHOSEN_IDS,
        names=split_pair(50, 50),
        role=st.sampled_from(settings.ROLES),
        remove=st.booleans(),
    )
    def edit_member(
        self,
        data: st.DataObject,
        chosen: str | None,
        names: tuple[str, str],
        role: str,
        remove: bool,
    ) -> None:
        """A member added (maybe under a chosen id), changed or removed in the dashboard."""
        members = self.ids("team_members")
        if chosen is None and members and data.draw(st.booleans(), label="existing"):
            chosen = data.draw(st.sampled_from(members), label="member")
        if remove and chosen in members:
            self.edited("team", chosen, delete=True)
            return
        fields = {"first_name": names[0], "last_name": names[1], "role": role}
        if chosen not in members:
            fields["email"] = f"{chosen or 'new'}@example.com"
        self.edited("team", chosen, fields=fields)

    @rule(data=st.data(), chosen=CHOSEN_IDS, name=text(50), remove=st.booleans())
    def change_job_type(
        self, data: st.DataObject, chosen: str | None, name: str, remove: bool
    ) -> None:
        """A job type created through the API, or added, renamed or removed in the dashboard
        (custom ones only: the predefined are the workspace's vocabulary)."""
        custom = self.ids("job_types", is_predefined=False)
        if chosen is None and not custom:
            self.changed("POST", "/v1/job-types", {"name": name})
            return
        if chosen is None:
            chosen = data.draw(st.sampled_from(custom), label="job type")
        if remove and chosen in custom:
            self.edited("job_types", chosen, delete=True)
        else:
            self.edited("job_types", chosen, fields={"name": name})

    @precondition(lambda self: self.ids("webhooks"))
    @rule(data=st.data(), name=text(100))
    def rename_webhook(self, data: st.DataObject, name: str) -> None:
        hook = self.pick(data, "webhooks")
        self.changed("PATCH", f"/v1/webhooks/{hook['id']}", {"name": name})

    @rule(per_webhook=st.integers(1, 3))
    def new_delivery_logs(self, per_webhook: int) -> None:
        """Delivery-log entries appended as if deliveries had happened (admin churn that
        changes nothing else)."""
        self.world.sim.churn(
            update_fraction=0, delete_fraction=0, new_deliveries_per_webhook=per_webhook
        )
        self.look()

    # -- the clock's edges ------------------------------------------------------------------------
    @precondition(lambda self: self.ids("projects"))
    @rule(
        data=st.data(),
        table=st.sampled_from(("projects", "jobs", "team_members")),
        created=st.none() | timestamp_ms(),
        updated=st.none() | timestamp_ms(),
    )
    def set_timestamps(
        self, data: st.DataObject, table: str, created: int | None, updated: int | None
    ) -> None:
        """A record's own `created` and `updated` set to edges of the clock (an import from
        another system): `updated` may go back, which only the API may say."""
        if not self.ids(table):
            return
        record = self.pick(data, table)
        fields = {k: v for k, v in (("created", created), ("updated", updated)) if v is not None}
        list_name = "team" if table == "team_members" else table
        self.edited(list_name, record["id"], fields=fields or {"updated": record["updated"]})
