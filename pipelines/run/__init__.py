"""One sync run and what every command shares: where it loads, the locks, repairs, signals."""
