"""Helpers for the tests and benchmarks only: servers a test starts and stops by its own handle.

`simulator_process` runs the API simulator as a subprocess; `postgres` runs a throwaway
PostgreSQL server. Nothing the sync runs (`sources/`, `pipelines/`) imports this package, and the
simulator does not serve it.
"""
