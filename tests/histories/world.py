"""One history's world, started afresh for every generated history and stopped by its own
handles: the simulator over HTTP on 127.0.0.1; a mailbox webhook that catches every delivery the
API sends, signed, so the history can hand each one to the receiver late, twice or out of
order; `drone-sync listen`'s receiver (its app over HTTP, its spool, its applier, ticked by the
history instead of by a thread, so what is applied when is the history's choice); and the
warehouse, a DuckDB file or a PostgreSQL dataset of its own.

Nothing here decides what the warehouse should hold: that is `expected.py`'s, checked by
`checks.py`.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from drone_ops_sync.pipelines.listen.app import EVENTS_PATH, Receiver, build_app
from drone_ops_sync.pipelines.listen.apply import MAX_BATCH_BYTES, Applier
from drone_ops_sync.pipelines.listen.serve import bind
from drone_ops_sync.pipelines.listen.spool import Spool, read_from
from drone_ops_sync.pipelines.run.sync import SyncOutcome
from drone_ops_sync.pipelines.run.target import Target
from drone_ops_sync.pipelines.session import run_sync
from drone_ops_sync.simulator.signing import sign
from drone_ops_sync.sources.drone_ops import read_source_config
from drone_ops_sync.sources.drone_ops.internal import Seams
from testkit.simulator_process import SimulatorHandle, running_simulator
from tests.pipelines.receiver import Receiver as Mailbox
from tests.pipelines.receiver import running_receiver
from tests.pipelines.run_seams import SeamTransport
from tests.pipelines.warehouse_check import Warehouse

SECRET = "whsec_aGlzdG9yaWVzLWtleS0wMTIzNDU2Nzg5YWJjZGVm"
SIGNATURE_HEADERS = ("webhook-id", "webhook-timestamp", "webhook-signature")
FRESH_SIGNATURE_S = 240
"""A caught delivery older than this is signed afresh before it is handed over, as the API's
sender signs each retry: the receiver refuses a signature more than 5 minutes old, and a long
history may hold a delivery back that long."""
WORKSPACE = (
    *("--projects", "3", "--jobs-per-project", "2", "--members", "3"),
    *("--webhooks", "1", "--logs-per-webhook", "3"),
)
"""A workspace of a few rows per table: the histories are many and long, not wide, and every
step's check reads every table whole."""
WAIT_S = 120.0
"""Generous bounds for a server to start and for deliveries to settle: not a pace."""


@dataclass(frozen=True)
class Place:
    """Where histories keep their warehouse, one history at a time: a DuckDB file under
    `root`, or a dataset of the PostgreSQL database `dsn` (whose credentials dlt reads from
    `DESTINATION__POSTGRES__CREDENTIALS`, set by whoever made the place). The names are the
    same for every history (each removes what it made), so dbt's partial parse, which a
    changed profile undoes, carries over from one history's as-of check to the next."""

    kind: str
    root: Path
    dsn: str | None = None

    @property
    def folder(self) -> Path:
        return self.root / "history"

    def target(self) -> tuple[Target, Warehouse]:
        if self.kind == "duckdb":
            database = self.folder / "warehouse.duckdb"
            return Target(database=database, pipelines_dir=self.folder / "pipelines"), database
        assert self.dsn is not None, "a postgres place needs its database"
        pipelines = self.folder / "pipelines"
        return Target(destination="postgres", dataset="history", pipelines_dir=pipelines), self.dsn


@dataclass(frozen=True)
class Delivery:
    """One delivery as it goes over the wire: the body's exact bytes and its signature."""

    body: bytes
    headers: dict[str, str]

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))

    @property
    def delivery_id(self) -> str:
        return str(self.event["delivery_id"])

    @staticmethod
    def signed(event: dict[str, Any]) -> Delivery:
        """An event the test makes itself, validly signed with the receiver's secret."""
        body = json.dumps(event).encode()
        return Delivery(body, sign(SECRET, str(event["delivery_id"]), body))


class World:
    """The servers and the warehouse of one history, and the few things a history does with
    them; opened by `open_world`, which stops everything it started."""

    def __init__(
        self,
        sim: SimulatorHandle,
        mailbox: Mailbox,
        listener: str,
        applier: Applier,
        target: Target,
        warehouse: Warehouse,
    ) -> None:
        self.sim, self.mailbox, self.listener = sim, mailbox, listener
        self.applier, self.target, self.warehouse = applier, target, warehouse
        self.api = sim.client(full=True, timeout=60)
        self.receiver = httpx.Client(timeout=60, trust_env=False)
        self._caught = 0
        self.run_seconds = 0.0

    def close(self) -> None:
        self.api.close()
        self.receiver.close()

    # -- the API ------------------------------------------------------------------------------
    def write(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One write through the API (full key); raises for anything but success, so a history
        that breaks a rule of the spec is the test's mistake, said at once."""
        response = self.api.request(method, path, json=body)
        if response.status_code >= 300:
            raise AssertionError(
                f"{method} {path} {body!r}: {response.status_code} {response.text}"
            )
        return response.json() if response.content else None

    def sent(self) -> list[Delivery]:
        """The deliveries the API sent to the mailbox since the last call, once settled."""
        self.sim.wait_for_deliveries(timeout=WAIT_S)
        received = self.mailbox.received()
        new, self._caught = received[self._caught :], len(received)
        out = []
        for request in new:
            headers = {k.lower(): v for k, v in request.headers.items()}
            out.append(Delivery(request.raw.encode(), {h: headers[h] for h in SIGNATURE_HEADERS}))
        return out

    # -- the receiver ---------------------------------------------------------------------------
    def deliver(self, delivery: Delivery) -> int:
        """Hands a delivery to the receiver over HTTP; its answer's status. A caught delivery
        whose signature has aged is signed afresh first (`FRESH_SIGNATURE_S`)."""
        headers = dict(delivery.headers)
        if time.time() - int(headers["webhook-timestamp"]) > FRESH_SIGNATURE_S:
            headers = sign(SECRET, delivery.delivery_id, delivery.body)
        response = self.receiver.post(
            f"{self.listener}{EVENTS_PATH}",
            content=delivery.body,
            headers={"content-type": "application/json", **headers},
        )
        return response.status_code

    def apply(self) -> None:
        """One tick of the applier, as its thread would make it: everything spooled beyond the
        mark is applied (a bounded number of batches), then the warehouse is let go."""
        applier = self.applier
        try:
            for _ in range(100):
                if not applier.tick():
                    break
        finally:
            applier.router.file.release()
        left = read_from(applier.spool.directory, applier.position, MAX_BATCH_BYTES)
        assert left.end == applier.position, f"events left unapplied: {applier.stats}"

    # -- the sync -------------------------------------------------------------------------------
    def run(
        self,
        *,
        slices: int = 1,
        full_refresh: bool = False,
        interrupt_at: int | None = None,
        after_listing: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> tuple[SyncOutcome, SeamTransport]:
        """One `run_sync` with the read-only key; `slices` is `job_refresh_slices`. Every run
        goes through the seam transport (the client's own engine behind it), interrupted or
        raced only where asked. The mass-delete guard is off: a history of a few rows would
        trip it at most deletions, and it is the chaos suite's subject."""
        started = time.monotonic()
        cancel = threading.Event()
        seam = SeamTransport(after_listing=after_listing, interrupt_at=interrupt_at, cancel=cancel)
        config = read_source_config(
            {
                "base_url": self.sim.base_url,
                "api_key": self.sim.read_key,
                "job_refresh_slices": slices,
                "max_retire_share": 1.0,
            }
        )
        outcome = run_sync(
            self.target,
            config=config,
            full_refresh=full_refresh,
            cancel=cancel,
            seams=Seams(transport=seam),
        )
        self.run_seconds += time.monotonic() - started
        return outcome, seam


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """An ASGI app served by uvicorn from a thread of this process on 127.0.0.1 (a free port)
    until the block ends; yields its base URL."""
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(app, lifespan="off", access_log=False, log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            raise RuntimeError("the receiver did not start")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=WAIT_S)
        sock.close()


@contextmanager
def open_world(place: Place, seed: int) -> Iterator[World]:
    """A history's world: a fresh simulator (`seed`), mailbox, receiver and warehouse, each
    stopped or removed when the block ends."""
    target, warehouse = place.target()
    with ExitStack() as stack:
        _forget(place, target)  # what a history that was killed left
        stack.callback(lambda: _forget(place, target))
        args = (*WORKSPACE, "--webhook-secret", SECRET)
        sim = stack.enter_context(running_simulator(seed=seed, scale="tiny", extra_args=args))
        mailbox = stack.enter_context(running_receiver())
        spool = Spool(place.folder / "spool")
        stack.callback(spool.close)
        listener = stack.enter_context(serving(build_app(Receiver(spool, (SECRET,)))))
        applier = Applier(target, spool, interval=1.0)
        stack.callback(applier.router.file.release)
        world = World(sim, mailbox, listener, applier, target, warehouse)
        stack.callback(world.close)
        hook = {
            "name": "mailbox",
            "url": f"{mailbox.url}/hook",
            "event_types": ["project.created", "project.updated"],
        }
        world.write("POST", "/v1/webhooks", hook)
        yield world


def _forget(place: Place, target: Target) -> None:
    """What a history leaves: its folder, and on PostgreSQL its dataset's schemas."""
    shutil.rmtree(place.folder, ignore_errors=True)
    if place.dsn is None:
        return
    import psycopg2

    connection = psycopg2.connect(place.dsn, connect_timeout=10)
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE %s",
                [f"{target.dataset}%"],
            )
            for (schema,) in cursor.fetchall():
                if schema == target.dataset or schema.startswith(f"{target.dataset}_"):
                    cursor.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        connection.close()
