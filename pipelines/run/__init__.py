"""One sync run: the lock, repairs of what a crashed run left, the load, the record of the run.

Also where the run loads (`target.py`; checked, and its dlt pipeline made, in
`destination.py`), the DuckDB file a turn keeps open between its steps (`kept_file.py`),
signals (`signals.py`) and process settings (`memory.py`) that every command shares.
"""
