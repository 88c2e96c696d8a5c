"""Chaos suite: faults, kills, churn and bad data, each ending with the same truth check."""
