"""One firing, one set of result buffers (``engine/kernels.py``, ``_ResultBuffers``): every
sliding or cumulative window a firing emits is written right after the rows of the window before
it (``descriptor_at``), by the accumulator or by a full merge, and one table is built from them
(``windows_table``: each row's window end; a window fired again for late records keeps only its
noted keys' rows). The thread-local and the shared window state both fire this way.

The random cases (``test_incremental_windows.incremental_cases``: nulls, disorder, allowed
lateness, gaps, several batches) run at parallelism 1-3 in both states against the reference;
the hand-picked ones make sure firings of several windows, refires and list aggregates (whose
emit appends to one output vector for all the windows) occur.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from strategies import assert_tables_equal
from test_incremental_windows import FIXTURE_OK, Case, check, incremental_cases

import grizzly_py as gz
from grizzly_py import Time, agg, reference
from grizzly_py.engine import kernels
from grizzly_py.windows import CumulativeEventTimeWindows, SlidingEventTimeWindows

ms = Time.milliseconds
i64 = pa.int64()
STATES = ["thread_local", "shared"]


@pytest.fixture
def firings(monkeypatch):
    """Each firing that emitted rows, as its windows' (rows written, window end, fired again)."""
    seen = []
    real = kernels._ResultBuffers.windows_table

    def windows_table(self, spans):
        seen.append([(rows, end, keys is not None) for rows, end, keys in spans])
        return real(self, spans)
    monkeypatch.setattr(kernels._ResultBuffers, "windows_table", windows_table)
    return seen


@FIXTURE_OK
@given(case=incremental_cases(), parallelism=st.integers(1, 3), state=st.sampled_from(STATES))
def test_firings_of_random_windows_match_reference(case, parallelism, state, firings):
    firings.clear()
    check(case, parallelism, window_state=state)
    note(f"windows per firing: {[len(f) for f in firings]}")


def _jumping(rows: int, keys: int, late_every: int = 0) -> dict:
    """Records 0.5 ms apart, then one 200 ms on (the watermark passes many windows at once);
    every ``late_every``-th record 30 ms behind; every 7th key null."""
    ts = [i // 2 - (30 if late_every and i % late_every == 0 and i > 60 else 0) for i in range(rows)] + [rows + 200]
    return {"ts": pa.array(ts, i64),
            "k": pa.array([None if i % 7 == 3 else i % keys for i in range(rows + 1)], i64),
            "v": pa.array([(i * 31) % 17 - 8 for i in range(rows + 1)], i64)}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_a_firing_of_many_windows_writes_them_one_after_another(state, parallelism, firings):
    case = Case(SlidingEventTimeWindows.of(ms(20), ms(2)), ["n", "s"], None, 0, _jumping(300, 5), [100, 100, 101])
    check(case, parallelism, window_state=state)
    assert max(len(f) for f in firings) >= 10, [len(f) for f in firings]


@pytest.mark.parametrize("state", STATES)
def test_windows_fired_again_keep_their_noted_keys_rows(state, firings):
    case = Case(SlidingEventTimeWindows.of(ms(20), ms(4)), ["n", "a"], 40, 0, _jumping(400, 6, late_every=23),
                [50] * 8 + [1])
    check(case, 2, window_state=state)
    assert any(again for f in firings for _, _, again in f), "no window fired again"
    assert max(len(f) for f in firings) >= 2


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("assigner", [SlidingEventTimeWindows.of(ms(20), ms(5)),
                                      CumulativeEventTimeWindows.of(ms(20), ms(5))], ids=["sliding", "cumulative"])
def test_list_aggregates_of_windows_fired_together(state, assigner, firings):
    """A top_k's emit appends each row's values to one output vector for the whole firing."""
    data = _jumping(240, 4)
    build = (lambda env: env.from_arrow(pa.table(data), timestamp="ts").key_by("k").window(assigner)
             .aggregate(t=agg.top_k("v", 3), n=agg.count()))
    expected, _ = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(window_state=state)
    build(env).collect("out")
    assert_tables_equal(env.execute()["out"], expected)
    assert max(len(f) for f in firings) >= 2
