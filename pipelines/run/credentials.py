"""A destination's credentials as dlt resolves them, with the password registered for
redaction, and what an incomplete connection string lacks (for the one-line message)."""

from __future__ import annotations

from typing import Any

from dlt.common.configuration.exceptions import ConfigFieldMissingException, LookupTraces

from drone_ops_sync.sources.drone_ops.internal import register_secret


def destination_credentials(name: str) -> Any:
    """The destination's resolved credentials; its password is registered for redaction, so
    no error text or log line can show it."""
    from dlt.common.destination import Destination

    factory: Any = Destination.from_reference(name)
    try:
        factory.configuration(None)
    except ConfigFieldMissingException as exc:
        # the dataset name comes from the pipeline; only what the credentials lack matters,
        # and PostgreSQL logs in without a password where the server allows it
        password_only = name == "postgres" and missing_fields(exc) == ["password"]
        if "credentials" in exc.traces and not password_only:
            raise
    credentials = factory.configuration(None, accept_partial=True).credentials
    if name == "postgres" and credentials.password is None:
        # dlt insists on one; libpq does not (trust, a .pgpass file, client certificates)
        credentials.password = ""
    password = getattr(credentials, "password", None)
    if password:
        register_secret(str(password))
    return credentials


def missing_fields(exc: ConfigFieldMissingException) -> list[str]:
    """The innermost missing fields (e.g. `password`, not the `credentials` holding it)."""
    missing: list[str] = []
    for name, traces in exc.traces.items():
        if name != "credentials":
            continue
        nested = [
            inner for trace in traces if isinstance(trace, LookupTraces) for inner in trace.traces
        ]
        missing.extend(nested or [name])
    return sorted(set(missing))


# what a complete connection string looks like, for the message when one is incomplete
CONNECTION_STRING_EXAMPLES = {
    "postgres": "postgresql://loader:<password>@db.example.com:5432/analytics",
}
