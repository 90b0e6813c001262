"""One owner per checkpoint directory, fencing, the atomic commit of several sinks, and checksums
(docs/fault_tolerance.md, "Ownership and integrity"; docs/security.md).

- ownership: a second resumer of a running job's checkpoints is refused at once, naming the owner
  (pid, host, start time); after the owner is killed with SIGKILL the next run takes over;
- fencing: an owner whose directory was taken over (its lock file removed, another job resumed and
  finished) fails with ``CheckpointFencedError`` at its next commit, mid-run or at its final commit,
  and nothing it wrote afterwards reaches the output;
- several sinks: a failure before the commit leaves no final file at all; a commit cut short
  between its renames is completed by the next start; two writers of one path never share a file;
- checksums: a flipped byte in a committed part makes its snapshot unusable on resume (falling back
  to an intact one) and stops the final write when it happens after the resume.

The chaos test (SIGKILL at random points, two sinks, concurrent resumers) is
``test_checkpoint.py::test_chaos_two_sinks_and_concurrent_resumers``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from test_checkpoint import (CHILD, REPO, Crash, _crash_runs, _data, _outputs, _read_output, _resume, _sliding,
                             _stateless, left_behind)

import grizzly_py as gz
from grizzly_py.engine import commit, snapshot
from grizzly_py.engine.checkpoint_errors import CheckpointCorruptError, CheckpointFencedError
from grizzly_py.engine.local import QueryRun
from grizzly_py.engine.ownership import LOCK_NAME, read_record
from grizzly_py.engine.sinks import CsvSink, open_sink
from grizzly_py.plan import SinkSpec


def _flip(path, at: float = 0.72) -> None:
    """Flip one bit of the byte at fraction ``at`` of the file (its size stays). In the parts these
    tests damage, 0.72 falls in a column's values: read as it is, the part gives other numbers
    without any error."""
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0x10
    path.write_bytes(bytes(data))


def _number(part) -> int:
    return int(part.name.split("-")[1].split(".")[0])


# ----------------------------------------------------------------------------------------------
# one owner per checkpoint directory
# ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_resumer_is_refused_naming_the_owner(tmp_path):
    """While a job runs on its checkpoints, a second run of it fails at once with an error naming
    the owner's pid, host and start time. Killed with SIGKILL, the owner's lock goes with it: the
    next run takes over and writes what an uninterrupted run writes."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(CHILD))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    outs, straight = _outputs(tmp_path, "out", "parquet"), _outputs(tmp_path, "straight", "parquet")
    chk = tmp_path / "chk"

    def job(outputs, checkpoints, delay):
        return [sys.executable, str(script), ",".join(map(str, outputs)), str(checkpoints), "1", delay, "hash"]

    owner = subprocess.Popen(job(outs, chk, "0.05"), env=env, stderr=subprocess.PIPE)  # ~8 s of batches
    try:
        deadline = time.monotonic() + 60
        while not list(chk.glob("chk-*.snap")):  # the owner runs: it has taken a snapshot
            assert owner.poll() is None and time.monotonic() < deadline, owner.stderr.read().decode()[-3000:]
            time.sleep(0.05)
        second = subprocess.run(job(outs, chk, "0"), env=env, capture_output=True, timeout=300)
        err = second.stderr.decode()
        assert second.returncode != 0, "a second resumer ran alongside the owner"
        assert "CheckpointOwnedError" in err, err[-3000:]
        assert f"is owned by another running job (pid {owner.pid} on host {socket.gethostname()}, started 20" in err
        assert owner.poll() is None, "the owner ended before the second resumer was refused: too fast a machine?"
        assert not outs[0].exists()
    finally:
        owner.kill()
        owner.communicate()
    assert read_record(str(chk)).pid == owner.pid
    subprocess.run(job(straight, "-", "0"), env=env, check=True, timeout=300)
    subprocess.run(job(outs, chk, "0"), env=env, check=True, timeout=300)  # takes over after the kill
    assert _read_output(outs[0]).equals(_read_output(straight[0]))
    assert read_record(str(chk)).epoch == 2  # the killed owner, then the last run (a refused resumer is no owner)
    assert not left_behind(chk)


def test_each_owner_has_a_new_epoch_in_its_snapshots_and_parts(tmp_path):
    path = tmp_path / "chk"
    _crash_runs(path, [5, 9])
    assert read_record(str(path)).epoch == 2
    assert {snapshot.read(str(p))["epoch"] for p in path.glob("chk-*.snap")} == {2}
    epochs = {p.name.split("-e")[1].split(".")[0] for p in (path / "parts").glob("*.arrow")}
    assert epochs == {"1", "2"}  # parts 1-5 from the first run, the rest from the second


# ----------------------------------------------------------------------------------------------
# fencing
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("when", ["mid-run", "before the final commit"])
def test_a_stale_owner_is_fenced(when, tmp_path):
    """Job A's lock is broken (its lock file removed) and job B takes the directory over, resumes
    from A's snapshot and finishes. A then fails at its next commit (a checkpoint mid-run, or its
    final commit) with CheckpointFencedError naming B, and B's output stays as B wrote it."""
    path, out = tmp_path / "chk", tmp_path / "out.parquet"
    batches = _data().to_batches(max_chunksize=100)
    interval = 1 if when == "mid-run" else 7  # 30 batches: the last snapshot at round 28
    finished = []

    def job(source):
        env = gz.StreamEnvironment()
        env.enable_checkpointing(path, interval_batches=interval)
        _sliding(env, source).sink_to_parquet(str(out))
        return env

    def taken_over(at):
        for i, batch in enumerate(batches):
            if i == at:
                break
            yield batch
        (path / LOCK_NAME).unlink(missing_ok=True)  # a stale lock broken by hand
        job(list(batches)).execute()  # job B, to the end
        finished.append(out.read_bytes())
        yield from batches[at:]

    # (A's snapshot writer may meet the removed lock file before B has written its owner record)
    fenced = rf"epoch 1\) no longer owns it: (it is now owned by pid {os.getpid()} on host .*, epoch 2|its lock file)"
    with pytest.raises(CheckpointFencedError, match=fenced):
        job(taken_over(12 if when == "mid-run" else len(batches))).execute()
    assert out.read_bytes() == finished[0]
    straight = gz.StreamEnvironment()
    _sliding(straight, batches).sink_to_parquet(str(tmp_path / "straight.parquet"))
    straight.execute()
    assert pq.read_table(out).equals(pq.read_table(tmp_path / "straight.parquet"))
    assert not left_behind(path), "the fenced job committed a part or snapshot after the takeover"
    assert not list(tmp_path.glob("*.inprogress"))


# ----------------------------------------------------------------------------------------------
# several sinks: all or none
# ----------------------------------------------------------------------------------------------
def _two_sink_job(tmp_path, source, checkpointed: bool, stem: str = "out"):
    """A sliding window to Parquet and a map to CSV, each over its own ``source()``."""
    env = gz.StreamEnvironment()
    if checkpointed:
        env.enable_checkpointing(tmp_path / "chk", interval_batches=1)
    windows, rows = _outputs(tmp_path, stem, "parquet+csv")
    _sliding(env, source()).sink_to_parquet(str(windows))
    _stateless(env, source()).sink_to_csv(str(rows))
    return env, (windows, rows)


def _assert_as_uninterrupted(tmp_path, outs, batches) -> None:
    env, straight = _two_sink_job(tmp_path, lambda: batches, checkpointed=False, stem="straight")
    env.execute()
    for got, want in zip(outs, straight):
        assert _read_output(got).equals(_read_output(want)), got.name


@pytest.mark.parametrize("checkpointed", [False, True])
def test_a_failure_before_the_commit_leaves_neither_file(checkpointed, tmp_path, monkeypatch):
    """The second sink fails as it finishes (after the first finished): neither final file
    appears, no temporary file stays; a rerun writes both as an uninterrupted run does."""
    batches = _data().to_batches(max_chunksize=100)

    def full_disk(self):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(CsvSink, "finish", full_disk)
    env, outs = _two_sink_job(tmp_path, lambda: batches, checkpointed)
    with pytest.raises(OSError, match="No space left"):
        env.execute()
    assert not [p for p in outs if p.exists()]
    assert not list(tmp_path.glob("*.inprogress"))
    monkeypatch.undo()
    env, outs = _two_sink_job(tmp_path, lambda: batches, checkpointed)
    env.execute()
    _assert_as_uninterrupted(tmp_path, outs, batches)


@pytest.mark.parametrize("checkpointed", [False, True])
def test_a_commit_cut_short_is_completed_at_the_next_start(checkpointed, tmp_path, monkeypatch):
    """The rename of the second sink's file fails after the first's succeeded (as if the process
    died between them): the next start of the job completes the commit before anything else, so
    both files are in place even though that run fails before its own commit."""
    batches = _data().to_batches(max_chunksize=100)
    rename = os.replace
    rows = _outputs(tmp_path, "out", "parquet+csv")[1]

    def dying(src, dst, *args, **kwargs):
        if os.fspath(dst) == str(rows):
            raise OSError(5, "Input/output error")
        return rename(src, dst, *args, **kwargs)
    monkeypatch.setattr(os, "replace", dying)
    env, outs = _two_sink_job(tmp_path, lambda: batches, checkpointed)
    with pytest.raises(OSError, match="Input/output error"):
        env.execute()
    monkeypatch.undo()
    assert outs[0].exists() and not outs[1].exists()
    def crash(self):
        raise Crash("crash before the commit")
    monkeypatch.setattr(QueryRun, "finish", crash)
    env, outs = _two_sink_job(tmp_path, lambda: batches, checkpointed)
    with pytest.raises(Crash):
        env.execute()
    monkeypatch.undo()
    _assert_as_uninterrupted(tmp_path, outs, batches)
    assert not list(tmp_path.glob("*.inprogress"))


def test_two_writers_of_one_path_never_share_a_file(tmp_path):
    """Each run writes its own temporary file; the last commit wins, whole."""
    spec = SinkSpec("csv", "out", str(tmp_path / "out.csv"))
    first, second = pa.table({"x": [1, 2, 3]}), pa.table({"x": [7, 8]})
    sinks = [open_sink(spec, first.schema) for _ in range(2)]
    assert sinks[0].tmp != sinks[1].tmp
    for sink, table in zip(sinks, [first, second]):
        for batch in table.to_batches():
            sink.write(batch)
    for sink, table in zip(sinks, [first, second]):
        sink.finish()
        commit.publish(sink.files(), str(tmp_path))
        assert pcsv.read_csv(spec.path).equals(table)
    assert not list(tmp_path.glob("*.inprogress"))


def test_temporary_files_of_dead_writers_are_removed_at_the_next_start(tmp_path):
    out = tmp_path / "out.parquet"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    dead, live = (tmp_path / f"out.parquet.{gone.pid}@{host}.0a1b2c3d.inprogress",
                  tmp_path / f"out.parquet.{os.getpid()}@{host}.0a1b2c3d.inprogress")
    for p in (dead, live):
        p.write_bytes(b"partial")
    env = gz.StreamEnvironment()
    _sliding(env, _data().to_batches(max_chunksize=500)).sink_to_parquet(str(out))
    env.execute()
    assert not dead.exists() and live.exists() and out.exists()


# ----------------------------------------------------------------------------------------------
# checksums
# ----------------------------------------------------------------------------------------------
def test_a_flipped_byte_in_a_committed_part_is_detected_on_resume(tmp_path):
    """The part only the newest snapshot lists is corrupt (its size unchanged): that snapshot is
    skipped and the job resumes from the one before; the output equals the reference's (restored
    as it is, the part would change the output silently)."""
    path = tmp_path / "chk"
    batches = _crash_runs(path, [12])
    newest = max((path / "parts").glob("*.arrow"), key=_number)
    assert _number(newest) == 12
    _flip(newest)
    metrics = _resume(path, batches, warning="output part q0-00000012-e1.arrow does not match its checksum")
    assert metrics["checkpoints"]["restored_from"] == 11


def test_a_part_corrupted_after_the_resume_stops_the_final_write(tmp_path):
    """A committed part changes on disk while the job runs: the final concatenation finds it and
    fails naming it, with no output file; the next run, finding the part corrupt, starts from
    scratch (every snapshot lists it) and writes the right output."""
    path, out = tmp_path / "chk", tmp_path / "out.parquet"
    batches = _data().to_batches(max_chunksize=100)
    damaged = []

    def damaging(at):
        for i, batch in enumerate(batches):
            if i == at:  # parts committed a few rounds ago: their snapshots are written
                damaged.append(min((path / "parts").glob("*.arrow"), key=_number))
                _flip(damaged[0])
            yield batch

    def job(source):
        env = gz.StreamEnvironment()
        env.enable_checkpointing(path, interval_batches=1)
        _sliding(env, source).sink_to_parquet(str(out))
        return env

    with pytest.raises(CheckpointCorruptError, match="does not match its checksum") as error:
        job(damaging(25)).execute()
    assert _number(damaged[0]) < 20 and damaged[0].name in str(error.value)
    assert not out.exists() and not list(tmp_path.glob("*.inprogress"))
    with pytest.warns(RuntimeWarning, match="does not match its checksum"):
        result = job(batches).execute()
    assert result.metrics["checkpoints"]["restored_from"] is None
    straight = gz.StreamEnvironment()
    _sliding(straight, batches).sink_to_parquet(str(tmp_path / "straight.parquet"))
    straight.execute()
    assert pq.read_table(out).equals(pq.read_table(tmp_path / "straight.parquet"))
