"""`drone-sync listen`: receives the API's webhook deliveries and keeps them on disk.

The receiver answers 2xx only once an event is in the spool and fsynced, so an acknowledged
event survives a crash of the receiver (even kill -9); duplicates are dropped by `delivery_id`,
across restarts. Applying spooled events to the warehouse is a later step (docs/events.md).

`signing.py` checks the signature, `spool.py` is the append-only file, `app.py` the Starlette
app, `serve.py` the command that hosts it with uvicorn.
"""
