"""The API's request handlers, one module per resource; `simulator/app.py` assembles them.

Each resource's handlers are a class over that resource's store collaborator whose `endpoints()`
lists (path, method, handler); the app wraps every one in the same auth, fault and stats guard.
"""
