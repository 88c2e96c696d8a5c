"""Benchmark suite: our sync vs dlt's rest_api source vs the raw HTTP floor, in wall time,
requests, peak RSS and CPU, with the performance targets checked (docs/performance.md)."""
