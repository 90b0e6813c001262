"""Interned string keys are released when the windows holding them fire (``engine/interning.py``,
``engine/string_release.py``).

- The interner by itself (a hypothesis property against a model, and cases by hand): a release
  forgets exactly the strings whose ids the state does not hold and that were not handed out
  since the last release, hands their ids out again, and keeps its byte count; a dictionary's ids
  remembered across batches are worked out again after a release, so no batch gets an id that
  went to another string.
- Every window kind and join with string keys, with a release after every firing (ids are
  reused at once), equals the reference evaluator: tumbling, sliding, session and count windows,
  window and interval joins; at parallelism 1 and 2, under hash, sort and adaptive grouping and
  the shared window state, with every row a morsel and rounds of a few rows (so that batches are
  prepared while the round before still runs and fires).
- With new keys in every window, the strings a job keeps stay bounded for every kind but count
  windows, which keep their keys for good (this failed before strings were released: the
  interner kept every string it had seen).

The limit's share (strings counted) is in ``tests/test_state_memory.py``, snapshots holding only
live strings in ``tests/test_checkpoint.py``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import assert_tables_equal

import grizzly_py as gz
from grizzly_py import Time, WatermarkStrategy, agg, reference
from grizzly_py.engine import interning
from grizzly_py.engine.batch_adapter import DictionaryCodes
from grizzly_py.engine.interning import StringInterner
from grizzly_py.windows import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows
from marks import all_but

NAMES = ["", "é", "a\x00", "key", "K"]


def fixture_ok(share: float) -> settings:
    """``share`` of the profile's examples, with function-scoped fixtures (set once per test)."""
    return settings(max_examples=max(int(settings().max_examples * share), 3),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def ms(n: int) -> Time:
    return Time.milliseconds(n)


def _values(interner: StringInterner, ids: pa.Array) -> list:
    valid = ids.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
    return interner.values(ids.fill_null(0).to_numpy(zero_copy_only=False), valid, pa.string()).to_pylist()


# ----------------------------------------------------------------------------------------------
# the interner
# ----------------------------------------------------------------------------------------------
@given(st.lists(st.one_of(
    st.tuples(st.just("intern"), st.lists(st.sampled_from(NAMES + ["x", "y", "zz", None]), max_size=6)),
    st.tuples(st.just("release"), st.lists(st.sampled_from(NAMES + ["x", "y", "zz"]), max_size=6))),
    max_size=25))
def test_releases_keep_held_strings_and_reuse_the_others_ids(ops):
    interner = StringInterner()
    model: dict[str, int] = {}  # the strings interned, with their ids
    for op in ops:
        if op[0] == "intern":
            ids = interner.ids(pa.array(op[1], pa.string()))
            assert _values(interner, ids) == op[1]
            for value, ident in zip(op[1], ids.to_pylist()):
                if value is not None:
                    assert model.setdefault(value, ident) == ident, "a string changed its id without a release"
            assert len(set(model.values())) == len(model), "two strings share an id"
            continue
        held = {v for v in op[1] if v in model}
        interner.release(np.array([model[v] for v in held], dtype=np.int64))
        model = {v: i for v, i in model.items() if v in held}
        assert {v: i for i, v in enumerate(interner.strings) if v is not None} == model
        assert len(interner) == len(model)
        assert interner.nbytes == sum(interning.string_bytes(v) for v in model)
        # the id space holds the kept strings and the free ids below the largest kept one
        assert len(interner.strings) == (max(model.values()) + 1 if model else 0)


def test_a_release_hands_the_lowest_free_ids_out_first():
    interner = StringInterner()
    interner.ids(pa.array(["a", "b", "c", "d", "e"]))
    assert interner.release(np.array([1, 3])) == 3
    assert interner.strings == [None, "b", None, "d"]  # (e's id left the id space)
    assert interner.ids(pa.array(["f", "g", "h"])).to_pylist() == [0, 2, 4]


def test_a_remembered_dictionary_is_mapped_again_after_a_release():
    """Batches sharing a dictionary share its ids (``memo``); once its strings are released and
    their ids handed out to others, the dictionary must get ids of its own again."""
    interner, codes = StringInterner(), DictionaryCodes()
    column = pa.array(["x", "y", "x"]).dictionary_encode()
    assert _values(interner, interner.ids(column, codes)) == ["x", "y", "x"]
    interner.release(np.zeros(0, np.int64))  # no window holds x or y any more
    assert interner.ids(pa.array(["z", "w"])).to_pylist() == [0, 1]  # x's and y's old ids
    assert _values(interner, interner.ids(column, codes)) == ["x", "y", "x"]


def test_load_restores_free_ids():
    interner = StringInterner()
    interner.load(["a", None, "c", None])
    assert len(interner) == 2 and interner.nbytes == interning.string_bytes("a") + interning.string_bytes("c")
    assert interner.ids(pa.array(["c", "new", "other", "a"])).to_pylist() == [2, 1, 3, 0]


# ----------------------------------------------------------------------------------------------
# every kind, releases after every firing, against the reference
# ----------------------------------------------------------------------------------------------
@st.composite
def drifting_rows(draw, max_rows: int = 80) -> tuple[dict, list[int], bool]:
    """Rows (``ts``, string key ``k``, small int key ``g``, value ``v``) whose keys drift with
    event time (a key is seen for ~10 ms, then others come), some out of order, some null keys;
    batch sizes; whether the keys are dictionary-encoded (one dictionary for every batch, as a
    table's batches share theirs)."""
    n = draw(st.integers(1, max_rows))
    ts, keys, t = [], [], 0
    for i in range(n):
        t += draw(st.integers(0, 3), label="gap")
        at = max(0, t - draw(st.integers(0, 4), label="lag"))
        ts.append(at)
        pick = draw(st.integers(0, 9), label="key")
        keys.append(None if pick == 9 else f"{NAMES[pick % len(NAMES)]}{at // 10 + pick % 3}")
    sizes, left = [], n
    while left:
        size = draw(st.integers(1, left), label="batch rows")
        sizes.append(size)
        left -= size
    return {"ts": ts, "k": keys, "g": [i % 2 for i in range(n)], "v": list(range(n))}, sizes, draw(st.booleans())


def _source(env, data, sizes, dictionary):
    keys = pa.array(data["k"], pa.string())
    keys = keys.dictionary_encode() if dictionary else keys
    whole = pa.record_batch({"ts": pa.array(data["ts"], pa.int64()), "k": keys,
                             "g": pa.array(data["g"], pa.int64()), "v": pa.array(data["v"], pa.int64())})
    batches, at = [], 0
    for size in sizes:
        batches.append(whole.slice(at, size))
        at += size
    return env.from_arrow(batches, timestamp="ts", watermark=WatermarkStrategy.for_bounded_out_of_orderness(ms(2)))


WINDOWS = {
    "tumbling": lambda s: s.key_by("k").window(TumblingEventTimeWindows.of(ms(5))).aggregate(
        c=agg.count(), s=agg.sum("v"), m=agg.median("v")),
    "tumbling_two_keys": lambda s: s.key_by("g", "k").window(TumblingEventTimeWindows.of(ms(4))).aggregate(
        c=agg.count(), mx=agg.max("v")),
    "sliding": lambda s: s.key_by("k").window(SlidingEventTimeWindows.of(ms(9), ms(3))).aggregate(
        c=agg.count(), s=agg.sum("v")),
    "session": lambda s: s.key_by("k").window(EventTimeSessionWindows.with_gap(ms(3))).aggregate(
        c=agg.count(), s=agg.sum("v")),
    "count": lambda s: s.key_by("k").count_window(3, 2).aggregate(c=agg.count(), s=agg.sum("v")),
}
JOINS = {
    "window_join": lambda a, b: a.join(b).where("k").equal_to("k").window(TumblingEventTimeWindows.of(ms(6))),
    "sliding_join": lambda a, b: a.join(b).where("k").equal_to("k").window(SlidingEventTimeWindows.of(ms(8), ms(4))),
    "session_join": lambda a, b: a.join(b).where("k").equal_to("k").window(EventTimeSessionWindows.with_gap(ms(3))),
    "interval_join": lambda a, b: a.interval_join(b).where("k").equal_to("k").between(ms(-3), ms(2)),
}
OPTIONS = [dict(parallelism=1, grouping="hash"), dict(parallelism=2, grouping="hash"),
           dict(parallelism=1, grouping="sort"), dict(parallelism=2, grouping="sort"),
           dict(parallelism=2, grouping="auto"), dict(parallelism=2, grouping="hash", window_state="shared")]



WORDS = ["a", "b", "é", "", "ab", "日本", "a\x00", "B"]
STRING_TYPES = [pa.string(), pa.large_string(), pa.dictionary(pa.int32(), pa.string())]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.one_of(st.none(), st.sampled_from(WORDS)), max_size=12),
                          st.sampled_from(STRING_TYPES), st.sets(st.sampled_from(WORDS))), min_size=1, max_size=8))
def test_ids_name_their_strings_across_batches_types_and_releases(steps):
    """Each batch's ids name its strings (known ones found in Arrow, new ones interned in
    Python), nulls stay null, and a release keeps the ids of the strings held."""
    interner = StringInterner()
    for values, arrow_type, held in steps:
        column = pa.array(values, pa.string()).cast(arrow_type)
        ids = interner.ids(column).to_pylist()
        assert [None if i is None else interner.strings[i] for i in ids] == values
        before = {interner.strings[i]: i for i in ids if i is not None}
        kept = {w: before[w] for w in held if w in before}
        interner.release(np.array(list(kept.values()), dtype=np.int64))
        assert all(interner.strings[i] == w for w, i in kept.items())
        assert interner.ids(pa.array(list(kept), pa.string())).to_pylist() == list(kept.values())

@pytest.fixture
def release_at_every_firing(monkeypatch):
    monkeypatch.setattr(StringInterner, "due", property(lambda self: True))


def _check(build, options: dict) -> None:
    expected, expected_metrics = reference.run(build(gz.StreamEnvironment()).node)
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    result = env.execute()
    assert_tables_equal(result["out"], expected)
    assert result.metrics["late_records"] == expected_metrics["late_records"]


@fixture_ok(0.75)
@given(rows=drifting_rows(), kind=st.sampled_from(sorted(WINDOWS)), options=st.sampled_from(OPTIONS))
def test_windows_releasing_strings_match_reference(rows, kind, options, release_at_every_firing, every_row_a_morsel):
    _check(lambda env: WINDOWS[kind](_source(env, *rows)), options)


@fixture_ok(0.5)
@given(left=drifting_rows(40), right=drifting_rows(40), kind=st.sampled_from(sorted(JOINS)),
       grouping=st.sampled_from(["hash", "sort"]))
@pytest.mark.slow
def test_joins_releasing_strings_match_reference(left, right, kind, grouping, release_at_every_firing):
    _check(lambda env: JOINS[kind](_source(env, *left), _source(env, *right)), dict(grouping=grouping))


# ----------------------------------------------------------------------------------------------
# new keys in every window: the strings kept stay bounded
# ----------------------------------------------------------------------------------------------
WINDOWS_SEEN, KEYS_PER_WINDOW = 40, 200


@pytest.fixture
def peak_strings(monkeypatch):
    """The most ids an interner has had (its strings and free ids) after interning a batch;
    releases as soon as the strings double, however few bytes they take."""
    monkeypatch.setattr(interning, "RELEASE_MIN_BYTES", 0, raising=False)
    peak = [0]
    real = StringInterner.ids

    def ids(self, column, memo=None):
        out = real(self, column, memo)
        peak[0] = max(peak[0], len(self.strings))
        return out
    monkeypatch.setattr(StringInterner, "ids", ids)
    return peak


def _new_keys_every_window(env, seed: int = 0):
    """``WINDOWS_SEEN`` windows of 1 s, each with ``KEYS_PER_WINDOW`` keys of its own, 4 records
    each (in batches of a quarter of a window's records)."""
    per_window = 4 * KEYS_PER_WINDOW
    rows = WINDOWS_SEEN * per_window
    i = np.arange(rows)
    window, k = i // per_window, (i + seed) % KEYS_PER_WINDOW
    table = pa.table({"ts": (window * 1000 + (i % per_window) * 1000 // per_window).astype(np.int64),
                      "k": pa.array([f"window {w} key {j}" for w, j in zip(window.tolist(), k.tolist())]),
                      "v": i.astype(np.int64)})
    return env.from_arrow(table.to_batches(max_chunksize=per_window // 4), timestamp="ts",
                          watermark=WatermarkStrategy.for_bounded_out_of_orderness(ms(0)))


BOUNDED = {  # name: (build, options)
    "tumbling": (lambda env: _new_keys_every_window(env).key_by("k").window(TumblingEventTimeWindows.of(ms(1000)))
                 .aggregate(c=agg.count()), dict(grouping="hash")),
    "tumbling_parallel": (lambda env: _new_keys_every_window(env).key_by("k").window(
        TumblingEventTimeWindows.of(ms(1000))).aggregate(c=agg.count()), dict(grouping="hash", parallelism=2)),
    "shared": (lambda env: _new_keys_every_window(env).key_by("k").window(TumblingEventTimeWindows.of(ms(1000)))
               .aggregate(c=agg.count()), dict(grouping="hash", parallelism=2, window_state="shared")),
    "sliding": (lambda env: _new_keys_every_window(env).key_by("k").window(
        SlidingEventTimeWindows.of(ms(2000), ms(1000))).aggregate(c=agg.count()), dict(grouping="hash")),
    "sort": (lambda env: _new_keys_every_window(env).key_by("k").window(TumblingEventTimeWindows.of(ms(1000)))
             .aggregate(c=agg.count()), dict(grouping="sort", parallelism=2)),
    "session": (lambda env: _new_keys_every_window(env).key_by("k").window(EventTimeSessionWindows.with_gap(ms(300)))
                .aggregate(c=agg.count()), dict(grouping="hash")),
    "window_join": (lambda env: _new_keys_every_window(env).join(_new_keys_every_window(env, 7)).where("k")
                    .equal_to("k").window(TumblingEventTimeWindows.of(ms(1000))), dict(grouping="hash")),
    "sort_merge_join": (lambda env: _new_keys_every_window(env).join(_new_keys_every_window(env, 7)).where("k")
                        .equal_to("k").window(TumblingEventTimeWindows.of(ms(1000))), dict(grouping="sort")),
    "session_join": (lambda env: _new_keys_every_window(env).join(_new_keys_every_window(env, 7)).where("k")
                     .equal_to("k").window(EventTimeSessionWindows.with_gap(ms(300))), dict(grouping="hash")),
    "interval_join": (lambda env: _new_keys_every_window(env).interval_join(_new_keys_every_window(env, 7)).where("k")
                      .equal_to("k").between(ms(-100), ms(100)), dict(grouping="hash")),
}
# the fast subset's jobs; the others keep their strings where one of these does (a worker's
# tables, pane tables, the key table of interval and session joins)
FAST_BOUNDED = ("tumbling", "shared", "sort", "session", "window_join", "sort_merge_join", "interval_join")


@pytest.mark.parametrize("name", all_but(sorted(BOUNDED), FAST_BOUNDED))
def test_strings_of_fired_windows_are_released(name, peak_strings, every_row_a_morsel, monkeypatch):
    """... and the results are those of a run that releases nothing. (Parallel tumbling windows:
    a round of tasks every few rows, so that windows fire between rounds as on large inputs.)"""
    build, options = BOUNDED[name]
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    out = env.execute()["out"]
    assert out.num_rows > 0
    # a window's keys, the next window's, and those handed out since the last release
    assert peak_strings[0] <= 6 * KEYS_PER_WINDOW, f"{name}: {peak_strings[0]} ids for {KEYS_PER_WINDOW} keys a window"
    monkeypatch.setattr(interning, "RELEASE_MIN_BYTES", 1 << 62, raising=False)
    env = gz.StreamEnvironment(**options)
    build(env).collect("out")
    assert_tables_equal(out, env.execute()["out"])


def test_count_windows_keep_their_keys(peak_strings):
    """A count window's key keeps its entry (its count goes on), so its string stays."""
    env = gz.StreamEnvironment()
    _new_keys_every_window(env).key_by("k").count_window(3).aggregate(c=agg.count()).collect("out")
    assert env.execute()["out"].num_rows > 0
    assert peak_strings[0] == WINDOWS_SEEN * KEYS_PER_WINDOW
