"""What a new process's first job pays for (``docs/benchmarks.md``, "First run in a new process").

pyarrow imports pandas (0.25-0.4 s) at its first conversion between Arrow and numpy or Python
values; the engine's paths convert through ``grizzly_py.arrow_numpy`` instead. A user sees
which modules a job loads, so it is tested in fresh processes: a YSB job over Arrow input, cold
and warm-started from the on-disk code and profile, leaves pandas unimported and gives the
results of the same job here. The conversions themselves equal pyarrow's (hypothesis).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import grizzly_py as gz
from grizzly_py.arrow_numpy import as_numpy, from_numpy, string_scalar
from grizzly_py.workloads.ysb import generate_ysb, ysb_query

ROOT = Path(__file__).resolve().parent.parent

_JOB = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    with pa.OSFile(sys.argv[1], "rb") as f:
        table = pa.ipc.open_file(f).read_all()
    import grizzly_py as gz
    from grizzly_py.engine.adaptive import AdaptiveSettings
    from grizzly_py.workloads.ysb import ysb_query
    # stages change as soon as they are due: the cold process reaches the optimized variant
    env = gz.StreamEnvironment(parallelism=int(sys.argv[2]), adaptive=AdaptiveSettings(wait_for_compile=True))
    ysb_query(env, table, int(sys.argv[3])).collect("out")
    result = env.execute()
    stages = [h["stage"] for h in result.metrics["queries"][0]["pipelines"][0]["variant_history"]]
    out = result["out"]
    print(json.dumps({"pandas": "pandas" in sys.modules, "stages": stages,
                      "rows": sorted(map(tuple, zip(*(out.column(i).to_pylist() for i in range(out.num_columns)))))}))
""")


# YSB's campaigns counted in 100 ms windows: 15 windows in 1.5M events, most fired mid-job
WINDOW = 100


def _ysb_rows(table: pa.Table, parallelism: int) -> list:
    env = gz.StreamEnvironment(parallelism=parallelism)
    ysb_query(env, table, WINDOW).collect("out")
    out = env.execute()["out"]
    return sorted(map(list, zip(*(out.column(i).to_pylist() for i in range(out.num_columns)))))


def _fresh_process(data: Path, cache: Path, parallelism: int) -> dict:
    env = {**os.environ, "GRIZZLY_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    # the code cache and its records on (the bench harness, imported by other tests, turns the
    # cache off for its own runs): the second process starts optimized
    for switch in ("GRIZZLY_LEARNED_VARIANTS", "GRIZZLY_CODE_CACHE"):
        env.pop(switch, None)
    done = subprocess.run([sys.executable, "-c", _JOB, str(data), str(parallelism), str(WINDOW)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_ysb_job_over_arrow_input_never_imports_pandas(tmp_path, parallelism):
    table = generate_ysb(1_500_000, batch_rows=1 << 16)
    data = tmp_path / "ysb.arrow"
    with pa.OSFile(str(data), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)
    expected = _ysb_rows(table, parallelism)
    cache = tmp_path / "cache"
    cold = _fresh_process(data, cache, parallelism)
    warm_started = _fresh_process(data, cache, parallelism)  # machine code and profile on disk
    assert expected, "the job fired no window"
    for run in (cold, warm_started):
        assert run["pandas"] is False, run["stages"]
        assert [list(r) for r in run["rows"]] == expected
    assert warm_started["stages"][0] == "optimized"


_PRIMITIVE = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
                              np.float32, np.float64, np.bool_])
_TARGETS = [None, pa.int64(), pa.int32(), pa.float64(), pa.timestamp("ms"), pa.date32(), pa.duration("us"),
            pa.bool_()]


@given(values=hnp.arrays(_PRIMITIVE, st.integers(0, 40)), target=st.sampled_from(_TARGETS),
       nulls=st.one_of(st.none(), st.integers(0, 2 ** 40)), offset=st.integers(0, 3))
def test_from_numpy_and_as_numpy_equal_pyarrow(values, target, nulls, offset):
    mask = None if nulls is None else np.array([(nulls >> (i % 40)) & 1 for i in range(len(values))], dtype=bool)
    try:
        expected = pa.array(values, type=target, mask=mask)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            from_numpy(values, target, mask)
        return
    got = from_numpy(values, target, mask)
    got.validate(full=True)
    assert got.type == expected.type and _values(got) == _values(expected)
    part = expected.slice(min(offset, len(expected)))
    view, converted = as_numpy(part), part.to_numpy(zero_copy_only=False)
    assert view.dtype == converted.dtype
    assert np.array_equal(view, converted, equal_nan=view.dtype.kind in "fcmM") if view.dtype != object \
        else list(view) == list(converted)
    chunked = pa.chunked_array([part, expected], type=expected.type)
    view, converted = as_numpy(chunked), chunked.to_numpy()
    assert view.dtype == converted.dtype
    assert np.array_equal(view, converted, equal_nan=view.dtype.kind in "fcmM") if view.dtype != object \
        else list(view) == list(converted)


def _values(array: pa.Array) -> list:
    """The values, NaN equal to NaN, temporal ones as their integer words (datetime's range is narrower)."""
    if pa.types.is_temporal(array.type):
        array = array.view(pa.int64() if array.type.bit_width == 64 else pa.int32())
    return ["nan" if v != v else v for v in array.to_pylist()]


@given(text=st.text(max_size=8), kind=st.sampled_from([pa.string(), pa.large_string(), pa.binary()]))
def test_string_scalar_equals_pyarrow(text, kind):
    assert string_scalar(text, kind).equals(pa.scalar(text, kind))


@pytest.mark.slow  # fourteen fresh processes
def test_bench_first_run_alternates_two_trees(capsys):
    """``bench.first_run --baseline-tree`` reports each mode for both checkouts (here the same
    one twice), with wall and CPU seconds and the stages of each first job."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench import first_run
    finally:
        sys.path.remove(str(ROOT))
    assert first_run.main(["--rows", "300000", "--repeat", "1", "--baseline-tree", str(ROOT)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| baseline: ")
            or line.startswith("| this tree: ")]
    assert len(rows) == 6
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[2]) > 0 and float(cells[6]) > 0  # first run: wall and CPU seconds
        assert cells[-1].startswith(("generic", "optimized"))
