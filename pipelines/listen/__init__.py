"""`drone-sync listen`: receives the API's webhook deliveries and keeps them on disk.

The receiver answers 2xx only once an event is in the spool and fsynced, so an acknowledged
event survives a crash of the receiver (even kill -9); duplicates are dropped by `delivery_id`,
across restarts. Spooled events are applied to the warehouse within seconds (docs/events.md).
"""
