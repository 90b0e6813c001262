"""The embedded execution engine: runs compiled pipelines over Arrow batches."""
