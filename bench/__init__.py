"""Benchmark harness for grizzly-py: seeded data generators, peers, runners and reports.

Each workload has a runner (``python bench/ysb.py ...``) that generates its data once, runs
every requested peer on the same data, cross-checks their results and writes a report under
``bench/results/``. See ``/work/shared/spec/benchmarks.md`` for the workloads and peers.
"""
