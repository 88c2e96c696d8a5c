"""One sync run and what every command shares: where it loads, the one door to the warehouse
(`door.py`), the locks, repairs, signals."""
