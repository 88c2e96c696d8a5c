"""Benchmark suite for issue 5: ours vs dlt rest_api vs the raw HTTP floor."""
