"""Operating a sync the way a data team does: is the warehouse fresh (`status.py`), who hears
when it is not or a run failed (`alerts.py`), what a monitoring system scrapes (`metrics.py`),
and what a lineage catalog records (`lineage.py`). `transport.py` is the one way any of them
sends anything, `watch.py` ties them to one `drone-sync run`.

None of this changes what a run loads or its exit code: an alert, a metrics file or a lineage
event that cannot be delivered is one warning line.
"""
