"""The on-disk machine-code cache (``grizzly_py/code_cache.py``): a module compiled once loads
from disk in a new process, gives the same results, and anything wrong with the cache (a
corrupt file, an unsafe folder, the cache switched off) means a normal compile."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import pytest

from grizzly_py import code_cache, jit

IR = """
define i64 @gz_test_cache_mul(i64 %a, i64 %b) {{
  %r = mul i64 %a, %b
  %s = add i64 %r, {bias}
  ret i64 %s
}}
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GRIZZLY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRIZZLY_CODE_CACHE", raising=False)
    return tmp_path / "code"


def _call(module: jit.CompiledModule, a: int, b: int) -> int:
    return module.function("gz_test_cache_mul", ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(a, b)


def test_a_compiled_module_loads_from_disk_the_second_time(cache_dir):
    ir = IR.format(bias=7001)
    first = jit._compile(ir, 3)  # (below the in-process cache, as a new process would)
    assert not first.from_disk and _call(first, 6, 7) == 42 + 7001
    (stored,) = cache_dir.glob("*.o")
    second = jit._compile(ir, 3)
    assert second.from_disk and _call(second, 6, 7) == 42 + 7001
    assert second.optimized_ir == first.optimized_ir  # made again on demand (explain)
    assert "imul" in second.assembly
    assert list(cache_dir.glob("*.o")) == [stored]


def test_the_machine_code_is_the_stored_object(cache_dir):
    """The loaded code is the file's: an object stored under another module's key is what runs
    (so a cached module really skips LLVM's code generation)."""
    ir_a, ir_b = IR.format(bias=1), IR.format(bias=2)
    jit._compile(ir_a, 3)
    jit._compile(ir_b, 3)
    name_a, name_b = (code_cache.key(jit._key(ir, 3), jit.disk_context()) for ir in (ir_a, ir_b))
    (cache_dir / f"{name_b}.o").write_bytes((cache_dir / f"{name_a}.o").read_bytes())
    planted = jit._compile(ir_b, 3)
    assert planted.from_disk and _call(planted, 6, 7) == 42 + 1


def test_the_key_covers_what_the_code_depends_on():
    host = ("llvmlite 1 llvm 22", "znver4", "+avx512f")
    base = code_cache.context("runtime", host)
    assert base == code_cache.context("runtime", host)
    contexts = [code_cache.context("runtime2", host), code_cache.context("runtime", ("x", "znver4", "+avx512f")),
                code_cache.context("runtime", (host[0], "znver3", host[2])),
                code_cache.context("runtime", (host[0], host[1], "-avx512f"))]
    assert len({base, *contexts}) == 1 + len(contexts)
    module = jit._key("ir", 3)
    names = [code_cache.key(module, c) for c in (base, *contexts)]
    names += [code_cache.key(jit._key("ir2", 3), base), code_cache.key(jit._key("ir", 1), base)]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_file_is_compiled_again(cache_dir, damage):
    ir = IR.format(bias=7002 + len(damage))
    jit._compile(ir, 3)
    (path,) = cache_dir.glob("*.o")
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[:len(data) // 2]
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    again = jit._compile(ir, 3)
    assert not again.from_disk and _call(again, 2, 3) == 6 + 7002 + len(damage)
    assert jit._compile(ir, 3).from_disk  # the compile wrote a whole file again


def test_switched_off_nothing_is_written(cache_dir, monkeypatch):
    monkeypatch.setenv("GRIZZLY_CODE_CACHE", "off")
    ir = IR.format(bias=7010)
    assert not jit._compile(ir, 3).from_disk
    assert not jit._compile(ir, 3).from_disk
    assert not cache_dir.exists() or not list(cache_dir.glob("*.o"))


def test_a_folder_others_may_write_to_is_not_used(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    (root / "code").mkdir(parents=True)
    os.chmod(root / "code", 0o777)
    monkeypatch.setenv("GRIZZLY_CACHE_DIR", str(root))
    assert code_cache.folder() is None
    ir = IR.format(bias=7011)
    assert not jit._compile(ir, 3).from_disk and not jit._compile(ir, 3).from_disk
    assert not list((root / "code").glob("*.o"))


def test_a_new_process_runs_a_query_from_cached_code(tmp_path):
    """Two processes run the same windowed query: the second loads every kernel it compiles
    from disk, and its result is the first one's."""
    script = textwrap.dedent("""
        import json
        import numpy as np, pyarrow as pa
        import grizzly_py as gz
        from grizzly_py import agg, col, jit, Time
        from grizzly_py.windows import TumblingEventTimeWindows
        n = 5000
        t = pa.table({"ts": np.arange(n, dtype=np.int64), "k": np.arange(n, dtype=np.int64) % 7,
                      "v": np.arange(n, dtype=np.int64) % 13})
        env = gz.StreamEnvironment(adaptive=False)
        (env.from_arrow(t, timestamp="ts").filter(col("v") > 3).key_by("k")
            .window(TumblingEventTimeWindows.of(Time.milliseconds(100))).aggregate(n=agg.count(), s=agg.sum(col("v")))
            .collect("out"))
        out = env.execute()["out"]
        modules = [f.result() for f in jit._cache.values()]
        print(json.dumps({"rows": out.to_pylist(), "from_disk": [m.from_disk for m in modules]}))
    """)
    env = {**os.environ, "GRIZZLY_CACHE_DIR": str(tmp_path)}
    env.pop("GRIZZLY_CODE_CACHE", None)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                      check=True, timeout=300).stdout.splitlines()[-1]) for _ in range(2)]
    assert runs[0]["rows"] == runs[1]["rows"] and len(runs[0]["rows"]) > 0
    assert runs[0]["from_disk"] and not any(runs[0]["from_disk"])
    assert runs[1]["from_disk"] and all(runs[1]["from_disk"])
