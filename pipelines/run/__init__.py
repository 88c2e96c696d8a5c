"""One sync run: the lock, repairs of what a crashed run left, the load, the record of the run.

Also where the run loads (`target.py`), signals (`signals.py`) and process settings
(`memory.py`) that every command shares.
"""
