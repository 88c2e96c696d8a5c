"""The console: text and JSON output, the run summary, the live progress line, logging."""
