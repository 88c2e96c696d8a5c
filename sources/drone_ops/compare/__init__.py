"""What each table loads this run: the walk's snapshot compared with the warehouse.

`changes.py` decides what is held, new, changed and gone (the first look, made as the walk
offers each page, and the diff after it); `deletions.py` decides what may be retired;
`table_sync.py` turns that into the rows each table loads and records the outcome. The package
imports none of them itself: the walk imports `changes.py` for its first look, and
`table_sync.py` imports the walk, so an import here would close a cycle.
"""
