"""A faithful, fast, seeded local implementation of the Drone Operations Service API."""
