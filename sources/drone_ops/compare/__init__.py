"""Whether each record changed, and what may be retired: pure decisions over Arrow tables."""
