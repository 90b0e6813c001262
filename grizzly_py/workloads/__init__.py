"""Seeded generators of benchmark workloads (shared by the examples, the tests and bench/)."""
