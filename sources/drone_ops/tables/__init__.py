"""What each table is and how an API record becomes its row.

`entities.py` is the registry every other part reads (one record per table); `schema.py` the
column contracts; `rows.py` the pure record → row → Arrow builders (the reporting path);
`lines.py` the fast path (records as JSON lines typed by Arrow's JSON reader); `payloads.py`
delivery payloads parsed into columns; `breaches.py` the value rules.
"""
