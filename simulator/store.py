"""In-memory workspace state and the domain operations of the API.

Every public method takes the store lock, so the event worker thread, admin churn and request
handlers can run concurrently. List methods return ready-to-send JSON bytes: rows are encoded
once with orjson and the encoding is cached until the row changes, which keeps the hot list path
cheap.
"""

from __future__ import annotations

import copy
import random
import threading
import time
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import Any

import orjson

from .bodies import ARCHIVED_FILTER, CURSOR_KINDS, ROLE_FILTER, STATUS_FILTER, cursor_field
from .deliveries import LazyLog
from .generator import SCALES, Counts, Generator
from .jobs import LazyJob
from .occurrences import DEFAULT_HORIZON_DAYS, occurrence_count
from .rules import STATUSES
from .validation import (
    ApiError,
    check_query,
    today_utc,
    validate_archive,
    validate_job,
    validate_job_type,
    validate_pilots,
    validate_project_create,
    validate_project_patch,
    validate_webhook,
)

PAGE_SIZE = 50
_ENC_CACHE_MAX = 100_000
Key = tuple[int, str]
Event = tuple[str, dict[str, Any]]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def encode_row(row: Any) -> bytes:
    """orjson output copied to an exact-size object.

    orjson returns bytes that keep its growth buffer (about 8 KiB for a 1 KiB row); cached rows
    would otherwise cost eight times their size.
    """
    return memoryview(orjson.dumps(row)).tobytes()


def encode_cursor(tag: str, key: Key) -> str:
    """`<list>.<created>.<id>` of the last row served: opaque to clients, and a regular
    language, so the OpenAPI document can state exactly which cursors a list accepts."""
    return f"{tag}.{key[0]}.{key[1]}"


_CURSOR_RULES = {kind: cursor_field(kind) for kind in CURSOR_KINDS}


def decode_cursor(tag: str, cursor: str | None) -> Key | None:
    """The (created, id) key a cursor points after; 400 `Invalid cursor` when it is not one
    of this list's cursors. An empty cursor is the first page."""
    value = check_query(cursor, _CURSOR_RULES[tag])
    if value is None:
        return None
    _, created, row_id = value.split(".", 2)
    return (int(created), row_id)


class KeyIndex:
    """Sorted (created, id) keys: the keyset that every list paginates over."""

    __slots__ = ("keys",)

    def __init__(self, keys: Iterable[Key] = ()) -> None:
        self.keys: list[Key] = sorted(keys)

    def add(self, key: Key) -> None:
        if not self.keys or key > self.keys[-1]:
            self.keys.append(key)
        else:
            insort(self.keys, key)

    def remove(self, key: Key) -> None:
        i = bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            del self.keys[i]

    def page(
        self,
        after: Key | None,
        keep: Callable[[str], bool] | None = None,
        reverse: bool = False,
    ) -> tuple[list[str], Key | None]:
        """Up to PAGE_SIZE ids after `after` and the cursor key, None when nothing follows."""
        keys = self.keys
        out: list[str] = []
        last: Key | None = None
        if reverse:
            i = (len(keys) if after is None else bisect_left(keys, after)) - 1
            step = -1
            stop = -1
        else:
            i = 0 if after is None else bisect_right(keys, after)
            step = 1
            stop = len(keys)
        while i != stop:
            k = keys[i]
            if keep is None or keep(k[1]):
                if len(out) == PAGE_SIZE:
                    return out, last
                out.append(k[1])
                last = k
            i += step
        return out, None


@dataclass
class Options:
    """Everything that decides the generated workspace."""

    seed: int = 42
    scale: str = "tiny"
    anchor: date | None = None
    horizon_days: int = DEFAULT_HORIZON_DAYS
    projects: int | None = None
    jobs_per_project: int | None = None
    members: int | None = None
    webhooks: int | None = None
    logs_per_webhook: int | None = None

    def counts(self) -> Counts:
        base = SCALES[self.scale]
        return Counts(
            projects=base.projects if self.projects is None else self.projects,
            jobs_per_project=base.jobs_per_project
            if self.jobs_per_project is None
            else self.jobs_per_project,
            members=base.members if self.members is None else self.members,
            webhooks=base.webhooks if self.webhooks is None else self.webhooks,
            logs_per_webhook=base.logs_per_webhook
            if self.logs_per_webhook is None
            else self.logs_per_webhook,
            custom_job_types=base.custom_job_types,
        )


class Store:
    """The workspace: rows, ordering indexes, assignments and the event hook."""

    def __init__(self, options: Options, full_key_label: str = "Full access key") -> None:
        self.options = options
        self.horizon_days = options.horizon_days
        anchor = options.anchor or today_utc()
        self.lock = threading.RLock()
        self.gen = gen = Generator(options.seed, options.counts(), anchor)
        # ids of rows created at run time come from a seeded stream (under the lock), so a
        # replayed sequence of requests gets the same ids
        self._ids = random.Random(f"{options.seed}:runtime-ids")
        self.workspace_id = gen.workspace_id
        self.api_key_creator = {
            "id": "apikey_" + f"{self._ids.getrandbits(48):012x}",
            "type": "api_key",
            "name": full_key_label,
        }
        self.on_event: Callable[[str, dict[str, Any]], None] | None = None
        self._last_ms = 0

        self.team = {m["id"]: m for m in gen.build_team()}
        # API keys are issued by the workspace's root member: a webhook created with the key
        # shows that member (spec 2.5 gives webhooks no API-key creator), a project the key
        root = gen.team[0]
        self.key_owner = {k: root[k] or "" for k in ("id", "email", "first_name", "last_name")}
        self.team_index = KeyIndex((m["created"], m["id"]) for m in self.team.values())
        self.team_enc: dict[str, bytes] = {}
        self.member_enc: dict[str, bytes] = {}

        self.job_types: dict[str, dict[str, Any]] = {}
        self.job_type_created: dict[str, int] = {}
        for created, jt in gen.build_job_types():
            self.job_types[jt["id"]] = jt
            self.job_type_created[jt["id"]] = created
        self.job_type_index = KeyIndex((c, i) for i, c in self.job_type_created.items())

        self.projects = {p["id"]: p for p in gen.build_projects()}
        self.project_index = KeyIndex((p["created"], p["id"]) for p in self.projects.values())
        self.project_enc: dict[str, bytes] = {}

        self.jobs: dict[str, dict[str, Any] | LazyJob] = {}
        self.project_jobs: dict[str, KeyIndex] = {pid: KeyIndex() for pid in self.projects}
        for jid, lj in gen.job_keys():
            self.jobs[jid] = lj
            self.project_jobs[lj.project_id].keys.append((lj.created, jid))
        for ki in self.project_jobs.values():
            ki.keys.sort()
        self.job_enc: dict[str, bytes] = {}
        self.assignments: dict[str, dict[str, int]] = {}

        self.webhooks: dict[str, dict[str, Any]] = {}
        self.logs: dict[str, dict[str, dict[str, Any] | LazyLog]] = {}
        self.log_index: dict[str, KeyIndex] = {}
        self.log_enc: dict[str, bytes] = {}
        self._webhook_by_index: list[dict[str, Any]] = []
        for wh, keys in gen.webhooks():
            self._webhook_by_index.append(copy.deepcopy(wh))
            self._add_webhook_row(wh)
            self.logs[wh["id"]] = dict(keys)
            self.log_index[wh["id"]].keys = sorted((lk.created, lid) for lid, lk in keys)
            wh["failure_count"] = sum(1 for _, lk in keys if lk.failed)
            if keys:
                wh["last_triggered_at"] = keys[-1][1].created
                wh["updated"] = max(wh["updated"], keys[-1][1].created)
        self.webhook_index = KeyIndex((w["created"], w["id"]) for w in self.webhooks.values())

    # -- helpers -----------------------------------------------------------------------------
    def _now(self) -> int:
        """Current ms, strictly increasing so new rows never tie on `created`."""
        t = max(now_ms(), self._last_ms + 1)
        self._last_ms = t
        return t

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{self._ids.getrandbits(64):016x}"

    def _add_webhook_row(self, wh: dict[str, Any]) -> None:
        self.webhooks[wh["id"]] = wh
        self.logs.setdefault(wh["id"], {})
        self.log_index.setdefault(wh["id"], KeyIndex())

    def _emit(self, event: str, project: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(event, dict(project))

    @staticmethod
    def _list_body(name: str, encs: list[bytes], cursor: str | None, count_name: str) -> bytes:
        tail = b"null" if cursor is None else b'"' + cursor.encode() + b'"'
        return b"".join(
            (
                b'{"',
                name.encode(),
                b'":[',
                b",".join(encs),
                b'],"',
                count_name.encode(),
                b'":',
                str(len(encs)).encode(),
                b',"cursor":',
                tail,
                b"}",
            )
        )

    @staticmethod
    def _cached(cache: dict[str, bytes], key: str, build: Callable[[], Any]) -> bytes:
        enc = cache.get(key)
        if enc is None:
            if len(cache) >= _ENC_CACHE_MAX:
                cache.clear()
            enc = cache[key] = encode_row(build())
        return enc

    # -- projects ----------------------------------------------------------------------------
    def list_projects(self, cursor: str | None, status: str | None, archived: str | None) -> bytes:
        after = decode_cursor("projects", cursor)
        want_archived = check_query(archived, ARCHIVED_FILTER) == "true"
        wanted = check_query(status, STATUS_FILTER)
        statuses = None if wanted is None else set(wanted.split(","))
        with self.lock:
            projects = self.projects
            if statuses is None:

                def keep(pid: str) -> bool:
                    return projects[pid]["archived"] is want_archived
            else:

                def keep(pid: str) -> bool:
                    p = projects[pid]
                    return p["archived"] is want_archived and p["status"] in statuses

            ids, last = self.project_index.page(after, keep)
            cache = self.project_enc
            encs = []
            for pid in ids:
                enc = cache.get(pid)
                if enc is None:
                    enc = cache[pid] = encode_row(projects[pid])
                encs.append(enc)
        cur = None if last is None else encode_cursor("projects", last)
        return self._list_body("projects", encs, cur, "count")

    def _project(self, project_id: str) -> dict[str, Any]:
        p = self.projects.get(project_id)
        if p is None:
            raise not_found("Project not found")
        return p

    def get_project(self, project_id: str) -> bytes:
        with self.lock:
            self._project(project_id)
            return self._cached(self.project_enc, project_id, lambda: self.projects[project_id])

    def create_project(self, body: dict[str, Any]) -> str:
        fields = validate_project_create(body)
        with self.lock:
            t = self._now()
            pid = self._new_id("prj_")
            p = {
                "id": pid,
                "name": fields["name"],
                "description": fields["description"],
                "status": fields["status"],
                "start_date": fields["start_date"],
                "end_date": fields["end_date"],
                "created": t,
                "updated": t,
                "archived": False,
                "external_id": fields["external_id"],
                "laanc_number": fields["laanc_number"],
                "created_by": dict(self.api_key_creator),
                "other_status_reason": fields["other_status_reason"],
            }
            self.projects[pid] = p
            self.project_index.add((t, pid))
            self.project_jobs[pid] = KeyIndex()
            self._emit("project.created", p)
        return pid

    def _touch_project(self, p: dict[str, Any], changes: dict[str, Any]) -> bool:
        changed = {k: v for k, v in changes.items() if p.get(k) != v}
        if not changed:
            return False
        p.update(changed)
        p["updated"] = max(now_ms(), p["updated"] + 1)
        self.project_enc.pop(p["id"], None)
        return True

    def patch_project(self, project_id: str, body: dict[str, Any]) -> None:
        with self.lock:
            p = self._project(project_id)
            changes = validate_project_patch(body, p)
            if self._touch_project(p, changes):
                self._emit("project.updated", p)

    def archive_project(self, project_id: str, body: dict[str, Any]) -> bool:
        with self.lock:
            p = self._project(project_id)
            archived = validate_archive(body)
            if self._touch_project(p, {"archived": archived}):
                self._emit("project.updated", p)
            return archived

    def delete_project(self, project_id: str) -> int:
        """Delete a project and cascade to its jobs and their assignments; returns jobs removed."""
        with self.lock:
            p = self._project(project_id)
            self.project_index.remove((p["created"], project_id))
            del self.projects[project_id]
            self.project_enc.pop(project_id, None)
            index = self.project_jobs.pop(project_id, KeyIndex())
            for _, jid in index.keys:
                self.jobs.pop(jid, None)
                self.job_enc.pop(jid, None)
                self.assignments.pop(jid, None)
            return len(index.keys)

    # -- jobs --------------------------------------------------------------------------------
    def _job_row(self, job_id: str) -> dict[str, Any]:
        j = self.jobs[job_id]
        if isinstance(j, LazyJob):
            return self.gen.job(j, job_id)
        return j

    def _materialize_job(self, job_id: str) -> dict[str, Any]:
        row = self._job_row(job_id)
        self.jobs[job_id] = row
        return row

    def _job_in(self, project_id: str, job_id: str, message: str = "Job not found") -> None:
        j = self.jobs.get(job_id)
        if j is None:
            raise not_found(message)
        owner = j.project_id if isinstance(j, LazyJob) else j["project_id"]
        if owner != project_id:
            raise not_found(message)

    def list_jobs(self, project_id: str, cursor: str | None) -> bytes:
        after = decode_cursor("jobs", cursor)
        with self.lock:
            self._project(project_id)
            ids, last = self.project_jobs[project_id].page(after)
            encs = [self._cached(self.job_enc, j, partial(self._job_row, j)) for j in ids]
        cur = None if last is None else encode_cursor("jobs", last)
        return self._list_body("jobs", encs, cur, "count")

    def get_job(self, project_id: str, job_id: str) -> bytes:
        with self.lock:
            self._job_in(project_id, job_id)
            return self._cached(self.job_enc, job_id, lambda: self._job_row(job_id))

    def job_dict(self, project_id: str, job_id: str) -> dict[str, Any]:
        with self.lock:
            self._job_in(project_id, job_id)
            return dict(self._job_row(job_id))

    def create_job(self, project_id: str, body: dict[str, Any]) -> str:
        with self.lock:
            self._project(project_id)
            fields = validate_job(body, set(self.job_types))
            t = self._now()
            jid = self._new_id("job_")
            row: dict[str, Any] = {"id": jid}
            order = [
                "name",
                "description",
                "type",
                "status",
                "priority",
                "job_pattern",
                "start_date",
                "end_date",
                "latitude",
                "longitude",
                "project_id",
                "inspection_notes",
                "capture_types",
                "external_id",
                "created",
                "updated",
                "other_status_reason",
            ]
            fields.update({"project_id": project_id, "created": t, "updated": t})
            for k in order:
                row[k] = fields.get(k)
            for k, v in fields.items():
                row.setdefault(k, v)
            self.jobs[jid] = row
            self.project_jobs[project_id].add((t, jid))
            return jid

    def patch_job(self, project_id: str, job_id: str, body: dict[str, Any]) -> None:
        with self.lock:
            self._job_in(project_id, job_id)
            cur = self._job_row(job_id)
            changes = validate_job(body, set(self.job_types), current=cur)
            changed = {k: v for k, v in changes.items() if cur.get(k) != v}
            if changed:
                row = self._materialize_job(job_id)
                row.update(changed)
                row["updated"] = max(now_ms(), row["updated"] + 1)
                self.job_enc.pop(job_id, None)

    def delete_job(self, project_id: str, job_id: str) -> None:
        with self.lock:
            self._job_in(project_id, job_id)
            j = self.jobs.pop(job_id)
            created = j.created if isinstance(j, LazyJob) else j["created"]
            self.project_jobs[project_id].remove((created, job_id))
            self.job_enc.pop(job_id, None)
            self.assignments.pop(job_id, None)

    def occurrences_of(self, job_id: str) -> int:
        return occurrence_count(self._job_row(job_id), self.horizon_days)

    def assign(self, project_id: str, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        pilots = validate_pilots(body, assign=True)
        with self.lock:
            self._job_in(project_id, job_id, "One or more pilots not found")
            for p in pilots:
                m = self.team.get(p)
                if m is None or m["role"] != "pilot":
                    raise not_found("One or more pilots not found")
            n = self.occurrences_of(job_id)
            current = self.assignments.setdefault(job_id, {})
            new = [p for p in pilots if p not in current]
            skipped = [p for p in pilots if p in current]
            for p in new:
                current[p] = n
        return {
            "message": f"Assigned {len(new)} pilot(s) to {n} occurrence(s)",
            "results": {"successful": len(new) * n, "skipped": len(skipped) * n, "failed": 0},
            "pilots_assigned": new,
            "pilots_skipped": skipped,
            "occurrences_per_pilot": n,
        }

    def unassign(self, project_id: str, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        pilots = validate_pilots(body, assign=False)
        message = "No pilot assignments found for this job"
        with self.lock:
            self._job_in(project_id, job_id, message)
            current = self.assignments.get(job_id, {})
            removed = [p for p in pilots if p in current]
            if not removed:
                raise not_found(message)
            records = sum(current.pop(p) for p in removed)
        return {
            "message": f"Removed {len(removed)} pilot(s) from the job",
            "pilots_removed": removed,
            "assignments_removed": records,
        }

    # -- job types ---------------------------------------------------------------------------
    def list_job_types(self, cursor: str | None) -> bytes:
        after = decode_cursor("job_types", cursor)
        with self.lock:
            ids, last = self.job_type_index.page(after)
            encs = [orjson.dumps(self.job_types[i]) for i in ids]
        cur = None if last is None else encode_cursor("job_types", last)
        return self._list_body("job_types", encs, cur, "count")

    def job_type_ids(self) -> list[str]:
        """Configured job type ids in list order (the enum of a job's `type`)."""
        with self.lock:
            return [k[1] for k in self.job_type_index.keys]

    def get_job_type(self, type_id: str) -> bytes:
        with self.lock:
            jt = self.job_types.get(type_id)
            if jt is None:
                raise not_found("Job Type not found")
            return orjson.dumps(jt)

    def create_job_type(self, body: dict[str, Any]) -> str:
        name, icon = validate_job_type(body)
        with self.lock:
            t = self._now()
            tid = self._new_id("jt_")
            self.job_types[tid] = {"id": tid, "name": name, "icon": icon, "is_predefined": False}
            self.job_type_created[tid] = t
            self.job_type_index.add((t, tid))
            return tid

    # -- team --------------------------------------------------------------------------------
    def list_team(self, cursor: str | None, role: str | None) -> bytes:
        after = decode_cursor("team", cursor)
        role = check_query(role, ROLE_FILTER)
        team = self.team
        keep = None if role is None or role == "all" else lambda i: team[i]["role"] == role
        with self.lock:
            ids, last = self.team_index.page(after, keep)
            encs = [self._cached(self.team_enc, i, partial(team.__getitem__, i)) for i in ids]
        cur = None if last is None else encode_cursor("team", last)
        return self._list_body("team", encs, cur, "count")

    def get_member(self, member_id: str) -> bytes:
        with self.lock:
            m = self.team.get(member_id)
            if m is None:
                raise not_found("User not found")
            return self._cached(
                self.member_enc, member_id, lambda: {k: v for k, v in m.items() if k != "status"}
            )

    # -- webhooks ----------------------------------------------------------------------------
    def _webhook(self, webhook_id: str) -> dict[str, Any]:
        wh = self.webhooks.get(webhook_id)
        if wh is None:
            raise not_found("Webhook not found")
        return wh

    def _log_row(self, webhook_id: str, log_id: str) -> dict[str, Any]:
        entry = self.logs[webhook_id][log_id]
        if isinstance(entry, LazyLog):
            return self.gen.log(entry, log_id, self._webhook_by_index[entry.webhook_index])
        return entry

    def get_webhook(self, webhook_id: str, cursor: str | None) -> bytes:
        after = decode_cursor("logs", cursor)
        with self.lock:
            wh = self._webhook(webhook_id)
            ids, last = self.log_index[webhook_id].page(after, reverse=True)
            encs = [
                self._cached(self.log_enc, i, partial(self._log_row, webhook_id, i)) for i in ids
            ]
            head = orjson.dumps(wh)
        cur = None if last is None else encode_cursor("logs", last)
        tail = b"null" if cur is None else b'"' + cur.encode() + b'"'
        return b"".join(
            (
                b'{"webhook":',
                head,
                b',"logs":[',
                b",".join(encs),
                b'],"log_count":',
                str(len(encs)).encode(),
                b',"cursor":',
                tail,
                b"}",
            )
        )

    def list_webhooks(self, cursor: str | None) -> bytes:
        after = decode_cursor("webhooks", cursor)
        with self.lock:
            ids, last = self.webhook_index.page(after)
            encs = [orjson.dumps(self.webhooks[i]) for i in ids]
        cur = None if last is None else encode_cursor("webhooks", last)
        return self._list_body("webhooks", encs, cur, "count")

    def create_webhook(self, body: dict[str, Any]) -> str:
        fields = validate_webhook(body, creating=True)
        with self.lock:
            t = self._now()
            wid = self._new_id("wh_")
            self._add_webhook_row(
                {
                    "id": wid,
                    "name": fields["name"],
                    "url": fields["url"],
                    "event_types": fields["event_types"],
                    "status": fields["status"],
                    "failure_count": 0,
                    "created": t,
                    "updated": t,
                    "created_by": dict(self.key_owner),
                    "last_triggered_at": None,
                }
            )
            self.webhook_index.add((t, wid))
            return wid

    def patch_webhook(self, webhook_id: str, body: dict[str, Any]) -> None:
        with self.lock:
            wh = self._webhook(webhook_id)
            fields = validate_webhook(body, creating=False)
            changed = {k: v for k, v in fields.items() if wh.get(k) != v}
            if changed:
                wh.update(changed)
                wh["updated"] = max(now_ms(), wh["updated"] + 1)

    def delete_webhook(self, webhook_id: str) -> None:
        with self.lock:
            wh = self._webhook(webhook_id)
            self.webhook_index.remove((wh["created"], webhook_id))
            del self.webhooks[webhook_id]
            for lid in self.logs.pop(webhook_id, {}):
                self.log_enc.pop(lid, None)
            self.log_index.pop(webhook_id, None)

    def subscribers(self, event: str) -> list[dict[str, Any]]:
        """Active webhooks subscribed to an event kind (copies, for the delivery worker)."""
        with self.lock:
            return [
                dict(w)
                for w in self.webhooks.values()
                if w["status"] == "active" and event in w["event_types"]
            ]

    def record_delivery(
        self,
        webhook_id: str,
        *,
        event: str,
        url: str,
        payload: str,
        response_status: int,
        response_body: str,
        duration_ms: int,
        error: str | None,
        created: int | None = None,
    ) -> str | None:
        """Append a delivery-log entry and update the webhook's counters."""
        with self.lock:
            wh = self.webhooks.get(webhook_id)
            if wh is None:
                return None
            ok = error is None and 200 <= response_status < 300
            t = self._now() if created is None else created
            lid = self._new_id("whl_")
            self.logs[webhook_id][lid] = {
                "id": lid,
                "event_type": event,
                "url": url,
                "status": "success" if ok else "failed",
                "response_status": response_status,
                "response_body": response_body,
                "request_payload": payload,
                "duration_ms": duration_ms,
                "error_message": error,
                "created": t,
            }
            self.log_index[webhook_id].add((t, lid))
            if not ok:
                wh["failure_count"] += 1
            wh["last_triggered_at"] = t
            wh["updated"] = max(t, wh["updated"] + 1)
            return lid

    def event_payload(self, event: str, project: dict[str, Any]) -> str:
        return orjson.dumps(
            {
                "delivery_id": self._new_id("dlv_"),
                "event": event,
                "timestamp": now_ms(),
                "workspace_id": self.workspace_id,
                "data": project,
            }
        ).decode()

    # -- churn -------------------------------------------------------------------------------
    def churn(
        self,
        seed: int = 0,
        update_fraction: float = 0.01,
        delete_fraction: float = 0.001,
        new_deliveries_per_webhook: int = 0,
    ) -> dict[str, int]:
        """Deterministic background change, as if edited in the dashboard (emits no events)."""
        rng = random.Random(f"churn:{seed}")
        with self.lock:
            pids = [k[1] for k in self.project_index.keys]
            jids = sorted(self.jobs)
            n_pu = round(len(pids) * update_fraction)
            n_ju = round(len(jids) * update_fraction)
            n_pd = round(len(pids) * delete_fraction)
            n_jd = round(len(jids) * delete_fraction)
            statuses = [s for s in STATUSES if s != "other"]
            updated = rng.sample(pids, n_pu)
            for pid in updated:
                p = self.projects[pid]
                self._touch_project(
                    p,
                    {
                        "status": rng.choice(statuses),
                        "other_status_reason": None,
                        "name": (p["name"][:90] + f" (rev {rng.randrange(100)})")[:100],
                    },
                )
            job_updates = 0
            for jid in rng.sample(jids, n_ju):
                row = self._materialize_job(jid)
                row["status"] = rng.choice(statuses)
                row["other_status_reason"] = None
                row["priority"] = rng.choice(("low", "medium", "high"))
                row["updated"] = max(now_ms(), row["updated"] + 1)
                self.job_enc.pop(jid, None)
                job_updates += 1
            deleted_projects = rng.sample(pids, n_pd)
            cascaded = sum(self.delete_project(pid) for pid in deleted_projects)
            jobs_deleted = 0
            live = [j for j in rng.sample(jids, min(n_jd + len(deleted_projects), len(jids)))]
            for jid in live:
                if jobs_deleted >= n_jd:
                    break
                j = self.jobs.get(jid)
                if j is None:
                    continue
                owner = j.project_id if isinstance(j, LazyJob) else j["project_id"]
                self.delete_job(owner, jid)
                jobs_deleted += 1
            logs_added = 0
            # deliveries report the projects as they are now, updates only (a project is
            # created once); the ones just edited first
            touched = [pid for pid in updated if pid in self.projects] or list(self.projects)
            for wid, wh in list(self.webhooks.items()):
                if not touched or "project.updated" not in wh["event_types"]:
                    continue
                for _ in range(new_deliveries_per_webhook):
                    event = "project.updated"
                    data = self.projects[rng.choice(touched)]
                    failed = rng.random() < 0.05
                    self.record_delivery(
                        wid,
                        event=event,
                        url=wh["url"],
                        payload=self.event_payload(event, data),
                        response_status=500 if failed else 200,
                        response_body="Internal Server Error" if failed else '{"ok":true}',
                        duration_ms=30 + rng.randrange(300),
                        error="Receiver responded with HTTP 500" if failed else None,
                    )
                    logs_added += 1
        return {
            "projects_updated": n_pu,
            "jobs_updated": job_updates,
            "projects_deleted": len(deleted_projects),
            "jobs_deleted": jobs_deleted,
            "jobs_deleted_by_cascade": cascaded,
            "logs_added": logs_added,
        }

    def example_ids(self) -> dict[str, str]:
        """Ids of real generated rows, used as OpenAPI examples (path ids, a pilot to assign)."""
        with self.lock:
            out: dict[str, str] = {"jobTypeId": "wind_turbine"}
            for _, pid in self.project_index.keys:
                jobs = self.project_jobs[pid].keys
                if jobs:
                    out["projectId"], out["jobId"] = pid, jobs[0][1]
                    break
            if self.team_index.keys:
                out["teamMemberId"] = self.team_index.keys[0][1]
            if self.webhook_index.keys:
                out["webhookId"] = self.webhook_index.keys[0][1]
            pilot = next((m for m in self.team.values() if m["role"] == "pilot"), None)
            if pilot is not None:
                out["pilotId"] = pilot["id"]
            return out

    # -- counts (for tests and benchmarks) ---------------------------------------------------
    def counts(self) -> dict[str, int]:
        with self.lock:
            return {
                "projects": len(self.projects),
                "projects_active": sum(1 for p in self.projects.values() if not p["archived"]),
                "jobs": len(self.jobs),
                "job_types": len(self.job_types),
                "team": len(self.team),
                "webhooks": len(self.webhooks),
                "logs": sum(len(v) for v in self.logs.values()),
            }
