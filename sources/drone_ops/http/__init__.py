"""HTTP to the Drone Operations API: the client, its paginator and its retry policy.

Takes checked values and imports nothing above it but the source's constants and errors.
"""

from .client import DroneOpsClient
from .pages import page_items
from .transport import Urllib3Transport

__all__ = ["DroneOpsClient", "Urllib3Transport", "page_items"]
