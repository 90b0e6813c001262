"""Generated pipelines are reused within a process (codegen/module.generate_pipeline): the same
pipeline under the same options takes the units made before; any difference renders anew."""

from __future__ import annotations

import gc
import weakref
from collections import OrderedDict
from dataclasses import replace

import pyarrow as pa

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.codegen import generate_pipeline
from grizzly_py.codegen import module as codegen_module
from grizzly_py.codegen.module import CodegenOptions, _generated_key
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query, SourceNode
from grizzly_py.stream import DataStream
from grizzly_py.windows import SlidingEventTimeWindows, TumblingEventTimeWindows


def _table(n=50):
    return pa.table({"ts": pa.array(range(n), pa.int64()), "kind": pa.array(["view", "click"] * (n // 2)),
                     "k": pa.array([i % 3 for i in range(n)], pa.int64()), "v": pa.array([float(i) for i in range(n)])})


def _pipeline(table=None, literal="view", window=None, aggregate=None):
    env = gz.StreamEnvironment()
    q = (env.from_arrow(table if table is not None else _table(), timestamp="ts").filter(col("kind") == literal)
         .key_by("k").window(window or TumblingEventTimeWindows.of(Time.milliseconds(10)))
         .aggregate(**(aggregate or {"n": agg.count()})))
    return build_physical_plan(Query(q.node)).pipelines[0]


def _ir(gen):
    return {name: gen.units[name].ir for name in gen.units}


def test_the_same_pipeline_takes_the_units_made_before_around_its_own_pipeline():
    first, second = _pipeline(), _pipeline(_table(80))  # (other data, the same columns)
    a, b = generate_pipeline(first), generate_pipeline(second)
    assert a.units is b.units
    assert a.pipeline is first and b.pipeline is second
    assert _ir(a) == _ir(b)


def test_any_difference_renders_anew():
    base = _pipeline()
    others = [_pipeline(literal="click"),
              _pipeline(window=TumblingEventTimeWindows.of(Time.milliseconds(20))),
              _pipeline(window=SlidingEventTimeWindows.of(Time.milliseconds(20), Time.milliseconds(10))),
              _pipeline(aggregate={"n": agg.sum("v")}),
              replace(base, id=base.id + 1)]
    gens = [generate_pipeline(base)] + [generate_pipeline(p) for p in others]
    gens.append(generate_pipeline(base, CodegenOptions(variant="instrumented")))
    gens.append(generate_pipeline(base, CodegenOptions(variant="optimized", dense_keys=(0, 16))))
    irs = [_ir(g) for g in gens]
    for i in range(len(irs)):
        for j in range(i + 1, len(irs)):
            assert gens[i].units is not gens[j].units
            assert irs[i] != irs[j], (i, j)


def test_what_is_remembered_does_not_hold_the_source_data(monkeypatch):
    monkeypatch.setattr(codegen_module, "_GENERATED", OrderedDict())  # (so that this pipeline is stored)
    table = _table(40)
    pipeline = _pipeline(table)
    generate_pipeline(pipeline)
    source = pipeline.input.source
    ref = weakref.ref(source)
    del pipeline, source, table
    gc.collect()
    assert len(codegen_module._GENERATED) == 1
    assert ref() is None


def test_a_pipeline_that_does_not_pickle_is_rendered_every_time():
    base = _pipeline()
    odd = replace(base, filters=base.filters + (lambda: 0,))  # (no real pipeline holds one)
    assert _generated_key(odd, None) is None
    assert _generated_key(base, None) is not None


def test_reuse_is_bounded(monkeypatch):
    monkeypatch.setattr(codegen_module, "GENERATED_LIMIT", 2)
    for literal in ("a", "b", "c", "d"):
        generate_pipeline(_pipeline(literal=literal))
    assert len(codegen_module._GENERATED) <= 2


def test_jobs_that_run_again_give_the_same_results():
    t = _table(200)

    def run():
        env = gz.StreamEnvironment()
        return (env.from_arrow(t, timestamp="ts").filter(col("kind") == "view").key_by("k")
                .window(TumblingEventTimeWindows.of(Time.milliseconds(10))).aggregate(s=agg.sum("v"))
                .execute_and_collect())
    assert run().equals(run())


def test_a_pipeline_over_a_source_with_list_columns_is_generated(monkeypatch):
    """(Spark's last stage reads window results back, top_k lists included, from a detached
    source that accepts them: the data-free copy must accept them too.)"""
    from grizzly_py.spark.shipping import DetachedSource
    monkeypatch.setattr(codegen_module, "_GENERATED", OrderedDict())
    schema = pa.schema([("ts", pa.int64()), ("top", pa.list_(pa.int64())), ("k", pa.int64())])
    src = DetachedSource("window results", schema, "ts")
    env = gz.StreamEnvironment()
    q = (DataStream(env, SourceNode(src)).key_by("k").window(TumblingEventTimeWindows.of(Time.milliseconds(10)))
         .aggregate(n=agg.count()))
    (pipeline,) = build_physical_plan(Query(q.node)).pipelines
    assert generate_pipeline(pipeline).pipeline is pipeline
