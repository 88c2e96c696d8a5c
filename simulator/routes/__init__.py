"""The API's request handlers, one module per resource; `simulator/app.py` assembles them.

Each resource module lists its operations as (path, method, handler) records over that
resource's store collaborator, the handlers made by the kinds in `http.py`; the app puts every
one behind the same auth, fault and stats guard. The admin API has a guard of its own.
"""
