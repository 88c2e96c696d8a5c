"""One sync run: the lock, repairs of what a crashed run left, the load, the record of the run.

Also where the run loads (`target.py`; checked, and its dlt pipeline made, in
`destination.py`), the one door to the warehouse (`door.py`: every connection, its errors, the
file a turn keeps open between its steps), signals (`signals.py`) and process settings
(`memory.py`) that every command shares.
"""
