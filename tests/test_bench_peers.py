"""The bench's suite peers are built from mixins (one per workload family: windows, joins,
Nexmark tables, strings); a method that two mixins define differently is shadowed in the peer by
whichever comes first in its bases, and the other family's workloads then call the wrong one
(the Spark peer's Nexmark-table ``_views`` once replaced its windows' ``_views`` and every Spark
count-window case failed). Each suite peer's mixins must agree on every name they share."""

import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peers import suite  # noqa: E402


def _suite_peers():
    return [cls for name, cls in inspect.getmembers(suite, inspect.isclass)
            if name.endswith("Suite") and cls.__module__ == suite.__name__]


def test_no_mixin_of_a_suite_peer_shadows_another_ones_method():
    peers = _suite_peers()
    assert len(peers) >= 6
    for peer in peers:
        own = set(vars(peer))
        owners: dict[str, set] = {}
        for base in peer.__bases__:
            for name in dir(base):
                if name.startswith("__") or name in own:
                    continue
                owners.setdefault(name, set()).add(next(k for k in base.__mro__ if name in vars(k)))
        for name, classes in owners.items():
            sources = {inspect.getsource(vars(k)[name]) if callable(vars(k)[name]) else repr(vars(k)[name])
                       for k in classes}
            assert len(sources) == 1, (f"{peer.__name__}.{name} is defined differently by "
                                       f"{sorted(k.__name__ for k in classes)}: one shadows the other")
