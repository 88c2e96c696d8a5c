"""Whether a server destination answers, checked before a run changes anything."""

from __future__ import annotations

from drone_ops_sync.sources.drone_ops import ConfigError, DroneOpsError
from drone_ops_sync.sources.drone_ops.internal import redact

from .credentials import destination_credentials
from .target import Target


class DestinationUnreachable(DroneOpsError):
    """The destination server did not answer; retrying later may help (exit 1)."""


# PostgreSQL's words for a refusal that only a settings change can fix
_CREDENTIAL_REFUSALS = ("password authentication failed", "does not exist", "no password")


def ensure_destination_reachable(target: Target) -> None:
    """Opens and closes one connection to a server destination before anything changes, so
    a wrong password or a server that is down is one line naming the cause (not a driver
    traceback half-way through a run)."""
    if target.destination != "postgres":
        return
    import psycopg2

    credentials = destination_credentials(target.destination)
    try:
        psycopg2.connect(credentials.to_native_representation(), connect_timeout=10).close()
    except psycopg2.OperationalError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        where = f"{credentials.host}:{credentials.port}/{credentials.database}"
        if any(refusal in reason for refusal in _CREDENTIAL_REFUSALS):
            raise ConfigError(
                "destination.postgres.credentials",
                f"PostgreSQL at {where} refused them: {redact(reason)}",
            ) from None
        raise DestinationUnreachable(
            f"cannot reach PostgreSQL at {where}: {redact(reason)}"
        ) from None
