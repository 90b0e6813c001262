"""Snapshot tests of generated LLVM IR: a change to code generation shows up as a reviewable diff.

Run with GRIZZLY_UPDATE_SNAPSHOTS=1 to rewrite the snapshots after an intended change.
Every snapshot must also parse, link with the runtime, verify and compile.
"""

import os
from pathlib import Path

import pyarrow as pa
import pytest

import grizzly_py as gz
from grizzly_py import Time, agg, col
from grizzly_py.codegen import generate_pipeline
from grizzly_py.codegen.module import CodegenOptions
from grizzly_py.codegen.specialize import simd_select_available
from grizzly_py.jit import compile_ir
from grizzly_py.physical import build_physical_plan
from grizzly_py.plan import Query
from grizzly_py.windows import TumblingEventTimeWindows

SNAPSHOTS = Path(__file__).parent / "snapshots"

TABLE = pa.table({
    "event_time": pa.array([1], pa.int64()),
    "event_type": pa.array(["view"]).dictionary_encode(),
    "campaign_id": pa.array([1], pa.int64()),
    "price": pa.array([1.5]),
    "qty": pa.array([3], pa.int32()),
    "name": pa.array(["x"]),
})


def ysb(s):
    return (s.filter(col("event_type") == "view").key_by("campaign_id")
            .window(TumblingEventTimeWindows.of(Time.seconds(10))).aggregate(views=agg.count()))


def stateless(s):
    return (s.filter((col("price") > 1.0) & (col("name") != "y"))
            .with_columns(total=col("price") * col("qty"), bucket=col("qty") % 4)
            .select("name", "total", "bucket"))


def global_aggregates(s):
    return (s.window_all(TumblingEventTimeWindows.of(Time.seconds(1)))
            .aggregate(n=agg.count(), s=agg.sum("qty"), lo=agg.min("price"), hi=agg.max("price"),
                       mean=agg.avg("price")))


def sliding_count_window(s):
    return (s.key_by("campaign_id", "name").count_window(100, 40)
            .aggregate(n=agg.count(), total=agg.sum("qty"), hi=agg.max("price"), med=agg.median("price")))


QUERIES = {"ysb": ysb, "stateless": stateless, "global_aggregates": global_aggregates,
           "sliding_count_window": sliding_count_window}


# the adaptive code variants of YSB's pipeline (engine/adaptive.py): profiling code, the
# optimized variant with a dense key range and branching filters, one with predicated filters,
# hence the branch-free dense pass (codegen/dense_pass.py), and the one YSB runs: its dense pass
# lists the kept third of the rows before it updates their entries
VARIANTS = {"ysb_instrumented": (ysb, CodegenOptions(variant="instrumented")),
            "ysb_optimized": (ysb, CodegenOptions(variant="optimized", filter_mode="branch", dense_keys=(-1250, 16384))),
            "ysb_optimized_predicated": (ysb, CodegenOptions(variant="optimized", dense_keys=(-2048, 16384))),
            "ysb_optimized_select": (ysb, CodegenOptions(variant="optimized", dense_keys=(-2048, 16384),
                                                         dense_select=True)),
            # ... and where the host has AVX-512, eight rows at a time (compiled only there)
            "ysb_optimized_simd": (ysb, CodegenOptions(variant="optimized", dense_keys=(-2048, 16384),
                                                       dense_select=True, simd_select=True))}


@pytest.mark.parametrize("name", sorted(QUERIES) + sorted(VARIANTS))
def test_generated_ir_matches_snapshot(name):
    build, options = VARIANTS[name] if name in VARIANTS else (QUERIES[name], None)
    if options is not None and options.simd_select and not simd_select_available():
        pytest.skip("the vector selection is generated only where the host has AVX-512 (F, VL)")
    stream = build(gz.StreamEnvironment().from_arrow(TABLE, timestamp="event_time"))
    gens = [generate_pipeline(p, options) for p in build_physical_plan(Query(stream.node)).pipelines]
    text = "\n".join(g.ir for g in gens)
    for unit in (u for g in gens for u in g.units.values()):
        compile_ir(unit.ir, unit.opt_level)  # parses, links the runtime, verifies, optimizes and JITs
    path = SNAPSHOTS / f"{name}.ll"
    if os.environ.get("GRIZZLY_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(text)
    assert text == path.read_text(), f"generated IR for {name} changed; review and set GRIZZLY_UPDATE_SNAPSHOTS=1"


def test_snapshot_shows_the_fused_ysb_loop():
    text = (SNAPSHOTS / "ysb.ll").read_text()
    # one kernel holds filter, window assignment, lateness check and the hash-table update
    body = text[text.index("define i64 @p0_generic_process"):text.index("define internal void")]
    for piece in ("-- filter", "-- window assign: tumbling 10000 ms", "-- pre-trigger", "@gz_ht_upsert",
                  "-- aggregate views = count"):
        assert piece in body


def test_a_deferred_unit_that_fails_to_render_fails_again_on_the_next_access():
    # (its error, not a KeyError: the builder leaves a failed spare kernel to the batch that
    # needs it, which must see why)
    from grizzly_py.codegen.generated import CodeUnit, CodeUnits
    calls = []

    def render():
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("out of memory while rendering")
        return CodeUnit("process", "; ir", 3)

    units = CodeUnits()
    units.defer("process", render)
    assert "process" in units and not units.rendered("process") and list(units) == ["process"]
    with pytest.raises(MemoryError):
        units["process"]
    assert units["process"].ir == "; ir" and units.rendered("process") and len(calls) == 2
