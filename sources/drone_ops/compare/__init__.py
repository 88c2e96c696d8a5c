"""Whether each record changed, and what may be retired: pure decisions over Arrow tables.

`changes.py` decides what is held, new, changed and gone (the first look, made as the walk
offers each page, and the diff after it); `deletions.py` decides what may be retired. Both sit
below the walk, which asks the first look as it offers a page; `table_loads.py`, above the
run, turns their decisions into the rows each table loads.
"""
