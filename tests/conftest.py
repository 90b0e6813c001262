"""Shared pytest configuration: hypothesis profiles.

``GRIZZLY_HYPOTHESIS_PROFILE`` picks one:

- ``default``: a few dozen examples per property, so the whole suite stays fast (compiling one
  query takes ~50-100 ms);
- ``long``: many examples, for a soak run (``GRIZZLY_HYPOTHESIS_PROFILE=long pytest tests/test_differential.py``);
- ``smoke``: a handful of examples, to check that the strategies work at all.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])

settings.register_profile("default", max_examples=40, **_COMMON)
settings.register_profile("long", max_examples=3000, **_COMMON)
settings.register_profile("smoke", max_examples=5, **_COMMON)
settings.load_profile(os.environ.get("GRIZZLY_HYPOTHESIS_PROFILE", "default"))
