"""What each table is and how an API record becomes its row (the modules: docs/architecture.md)."""
