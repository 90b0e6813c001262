"""Shared pytest configuration: hypothesis profiles, and fixtures for parallel execution.

``GRIZZLY_HYPOTHESIS_PROFILE`` picks one:

- ``default``: a few dozen examples per property, so the whole suite stays fast (compiling one
  query takes ~50-100 ms);
- ``long``: many examples, for a soak run (``GRIZZLY_HYPOTHESIS_PROFILE=long pytest tests/test_differential.py``);
- ``smoke``: a handful of examples, to check that the strategies work at all.
"""

import atexit
import os
import random
import shutil
import tempfile
import threading
import time

import pytest
from hypothesis import HealthCheck, settings

# a fresh cache folder (templates' bytecode, machine code) per session: no result depends on
# what earlier runs left in ~/.cache/grizzly-py (set GRIZZLY_CACHE_DIR to share one on purpose)
# each test's variant history is its own: a record that a subprocess or a Spark worker wrote
# into the shared cache folder would start a test's first job of the same plan optimized
# (test_learned_variants turns the records on for its own jobs)
os.environ.setdefault("GRIZZLY_LEARNED_VARIANTS", "off")
if "GRIZZLY_CACHE_DIR" not in os.environ:
    os.environ["GRIZZLY_CACHE_DIR"] = tempfile.mkdtemp(prefix="grizzly-test-cache-")
    atexit.register(shutil.rmtree, os.environ["GRIZZLY_CACHE_DIR"], ignore_errors=True)

from grizzly_py.engine import kernels, learned_variants
from grizzly_py.engine.parallel import CostModel

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])



@pytest.fixture(autouse=True)
def _each_test_profiles_afresh():
    """A job starts in the optimized variant the process's last job of its plan entered
    (``engine/learned_variants.py``): within a test, as users' jobs do; across tests, not (a
    test's variant history would depend on which tests ran before it)."""
    learned_variants.forget_all()
    yield


settings.register_profile("default", max_examples=40, **_COMMON)
settings.register_profile("long", max_examples=3000, **_COMMON)
settings.register_profile("smoke", max_examples=5, **_COMMON)
settings.load_profile(os.environ.get("GRIZZLY_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def every_row_a_morsel(monkeypatch):
    """Cut each batch into as many morsels as there are workers (tiny inputs run in parallel),
    group only a few rows of source batches per round of tasks (so windows fire between rounds),
    and let the driver run a share of some rounds itself, of others none (a seeded draw)."""
    monkeypatch.setattr(CostModel, "morsel_count", lambda self, rows, workers: max(1, min(workers, rows)))
    monkeypatch.setattr(CostModel, "group_rows", lambda self, workers, first=False: 3)
    monkeypatch.setattr(CostModel, "min_rows", 1)
    rng = random.Random(11)

    def driver_time(self, seconds):  # none (an equal share) or more than any round (no share)
        self.driver_ns = rng.choice([0.0, 1e15])
    monkeypatch.setattr(CostModel, "observe_driver", driver_time)


@pytest.fixture
def random_delays(monkeypatch):
    """Sleep 0-2 ms before every kernel call (a batch's, or a task's parts in one call), so tasks
    finish out of order."""
    rng = random.Random(7)
    lock = threading.Lock()

    def delaying(real):
        def delayed(self, *args, **kwargs):
            with lock:
                delay = rng.random() * 0.002
            time.sleep(delay)
            return real(self, *args, **kwargs)
        return delayed
    monkeypatch.setattr(kernels.Kernel, "run", delaying(kernels.Kernel.run))
    monkeypatch.setattr(kernels.Kernel, "run_parts", delaying(kernels.Kernel.run_parts))
