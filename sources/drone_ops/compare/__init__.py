"""What each table loads this run: the walk's snapshot compared with the warehouse.

`changes.py` finds what is new, changed and gone; `deletions.py` decides what may be retired;
`table_sync.py` turns that into the rows each table loads and records the outcome.
"""

from .table_sync import TableSync

__all__ = ["TableSync"]
