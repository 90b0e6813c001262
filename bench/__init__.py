"""Benchmark harness for grizzly-py: seeded data generators, peers, runners and reports.

Each workload has a runner (``python -m bench.ysb ...``) that generates its data once, runs
every requested peer on the same data, cross-checks their results and writes a report to
``--out`` (default: ``output.default_results_dir()``, under grizzly-py's cache folder). The
package is ``bench`` in a checkout and ``grizzly_py.bench`` in the wheel (``grizzly bench``);
its modules import each other relatively. The workloads and peers: ``workloads.py`` and
docs/benchmarks.md ("Workloads, pending features, peers").
"""
