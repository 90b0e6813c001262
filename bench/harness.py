"""Run peers on one data set and cross-check their results.

Workload runners (``bench/ysb.py``, ...) build their peers and data, then call ``run_peer`` for
each and ``cross_check`` on the lot. A peer's status is ``ok``, ``missing`` (its library or
engine is not available here: ``PeerUnavailable`` from setup, with the reason), ``unsupported``
(it raised ``NotImplementedError``: the engine cannot express or compile this query yet; it is
tried again on every run, so it turns ``ok`` by itself once supported) or ``failed`` (it raised,
crashed, or its runs disagreed with each other); it is never silently skipped.

``run_interleaved`` sets every peer up, then times one run of each peer per round (each in a
forked child of its own): the host's drift reaches every peer alike. ``run_isolated`` runs a
peer in a forked child process, which inherits the generated data
copy-on-write: a peer that crashes the interpreter (a JIT bug, a segfault in native code)
becomes a failed peer instead of ending the run, and each peer's memory is its own.
``run_isolated_each`` does the same for a peer that runs several cases (one engine start for
all of them): each case's result comes back as soon as it is done, and a crash fails only the
case it happened in.

Benchmarks compile with the on-disk machine-code cache off (``GRIZZLY_CODE_CACHE=off`` unless
the caller set it): a peer's first run, and the adaptive runs in fresh processes, compile as a
new job on a new machine does, whatever earlier runs left on disk.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
import signal
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from .host import process_memory_gib
from .output import default_results_dir

os.environ.setdefault("GRIZZLY_CODE_CACHE", "off")
from .peers.base import Peer, PeerUnavailable, Summary, summarize
from .timing import Runs, timed


@dataclass
class PeerResult:
    name: str
    description: str
    status: str = "ok"  # ok | missing | unsupported | failed
    error: str | None = None
    traceback: str | None = None
    runs: Runs | None = None
    summary: Summary | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "status": self.status,
            "error": self.error,
            "traceback": self.traceback,
            "runs": self.runs.as_dict() if self.runs else None,
            "summary": self.summary.as_dict() if self.summary else None,
            "info": self.info,
        }


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def _run_line(result: PeerResult, i: int, repeat: int) -> str:
    seconds = result.runs.seconds[-1]
    return (f"  {result.name} run {i + 1}/{repeat}: {seconds:.3f} s "
            f"({result.runs.n_records / seconds / 1e6:.1f} Mrec/s)")


class PeerRunner:
    """One peer's runs, a step at a time: ``setup`` (untimed), then ``run`` once per call (timed,
    summarized, checked against the first run's summary), then ``finish``. A step that fails
    sets the result's status and ends the runs (``live``). ``run_peer`` takes the steps back
    to back; ``run_interleaved`` takes one run of every peer per round."""

    def __init__(self, peer: Peer, n_records: int, log: Callable[[str], None] = print,
                 summarize: Callable[[Any], Any] = summarize):
        self.peer, self.log, self.summarize = peer, log, summarize
        self.result = PeerResult(peer.name, peer.description, runs=Runs(n_records))
        self.live = False

    def setup(self, data: Any) -> PeerResult:
        result = self.result
        try:
            self.peer.setup(data)
            self.live = True
        except PeerUnavailable as exc:
            result.status, result.error = "missing", str(exc)
        except NotImplementedError as exc:
            result.status, result.error = "unsupported", f"setup: {_describe(exc)}"
        except Exception as exc:  # noqa: BLE001 - reported, never swallowed
            result.status, result.error = "failed", f"setup: {_describe(exc)}"
            result.traceback = traceback.format_exc()
        return result

    def run(self, i: int, repeat: int) -> PeerResult:
        """Run ``i`` (from 0) of ``repeat``."""
        result, peer = self.result, self.peer
        try:
            seconds, table = timed(peer.run)
            if not peer.computes_query:  # a ceiling peer: timed, left out of the cross-check
                del table
                result.runs.seconds.append(seconds)
                self.log(_run_line(result, i, repeat))
                return result
            summary = self.summarize(table)
        except NotImplementedError as exc:
            result.status, result.error, self.live = "unsupported", _describe(exc), False
            return result
        except Exception as exc:  # noqa: BLE001 - reported, never swallowed
            result.status, result.error, self.live = "failed", f"run {i + 1}: {_describe(exc)}", False
            result.traceback = traceback.format_exc()
            return result
        del table
        result.runs.seconds.append(seconds)
        self.log(_run_line(result, i, repeat))
        if result.summary is None:
            result.summary = summary
        elif summary != result.summary:
            result.status, self.live = "failed", False
            result.error = f"run {i + 1} result differs from run 1: {summary} != {result.summary}"
        return result

    def finish(self) -> PeerResult:
        result = self.result
        result.info.update(self.peer.info)
        try:
            self.peer.close()
        except Exception as exc:  # noqa: BLE001 - a failing close is worth a note, not a crash
            result.info["close_error"] = _describe(exc)
        result.info.update(process_memory_gib())
        self.live = False
        return result


def run_peer(peer: Peer, data: Any, n_records: int, repeat: int,
             log: Callable[[str], None] = print,
             summarize: Callable[[Any], Any] = summarize,
             budget_s: float | None = None, min_runs: int = 3) -> PeerResult:
    """Set ``peer`` up on ``data`` (untimed), time ``repeat`` runs, summarize and check them.
    ``summarize`` digests a run's result; runs must give equal (``==``) digests. With
    ``budget_s``, a slow peer stops after ``min_runs`` runs once its runs took that long."""
    runner = PeerRunner(peer, n_records, log, summarize)
    result = runner.result
    try:
        runner.setup(data)
        for i in range(repeat):
            if not runner.live:
                break
            runner.run(i, repeat)
            if runner.live and budget_s is not None and min_runs <= i + 1 < repeat \
                    and sum(result.runs.seconds) > budget_s:
                result.info["runs_cut_by_budget"] = f"{i + 1} of {repeat} runs (budget {budget_s:g} s)"
                break
        return result
    finally:
        runner.finish()


_PARENT_FDS: set[int] = set()  # this process's ends of its forked runners' pipes


class _ForkedRunner:
    """A ``PeerRunner`` in a forked child that takes one command at a time over a pipe: the
    child sets the peer up, runs it once per ``run`` and finishes on ``finish``, sending the
    result back after each step. A child that dies fails the peer, as ``run_isolated`` does.
    Each child closes the parent's ends of the other runners' pipes, so a child gets EOF (and
    exits) as soon as the parent goes away."""

    def __init__(self, peer: Peer, data: Any, n_records: int, log: Callable[[str], None],
                 summarize: Callable[[Any], Any] = summarize):
        self.result, self.log = PeerResult(peer.name, peer.description, runs=Runs(n_records)), log
        sys.stdout.flush()
        sys.stderr.flush()
        command_r, self._command = os.pipe()
        self._reply, reply_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # child: serve commands until finish, then exit without cleanup handlers
            code = 0
            try:
                for fd in _PARENT_FDS | {self._command, self._reply}:
                    os.close(fd)
                runner = PeerRunner(peer, n_records, lambda line: None, summarize)  # (the parent logs)
                with os.fdopen(command_r, "rb") as commands, os.fdopen(reply_w, "wb") as replies:
                    pickle.dump((runner.setup(data), runner.live), replies)
                    replies.flush()
                    for line in commands:
                        op, *args = line.split()
                        if op == b"run":
                            pickle.dump((runner.run(int(args[0]), int(args[1])), runner.live), replies)
                        else:
                            pickle.dump((runner.finish(), False), replies)
                        replies.flush()
                        if op != b"run":
                            break
            except BaseException:  # noqa: BLE001
                code = 1
                traceback.print_exc()  # (what the parent can only report as "exited with status 1")
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.close(command_r)
        os.close(reply_w)
        _PARENT_FDS.update((self._command, self._reply))
        self._replies = os.fdopen(self._reply, "rb")
        self.live = self._receive()

    def _receive(self) -> bool:
        """The child's next reply; a child that died fails the peer (and is waited for)."""
        try:
            self.result, live = pickle.load(self._replies)
            return live
        except Exception:  # noqa: BLE001 - EOF, a truncated or unreadable reply: the child is gone
            if self.pid:
                _, status = os.waitpid(self.pid, 0)
                self.result.status, self.result.error = "failed", f"child process {_how_it_ended(status)}"
                self.pid = 0
            return False

    def _send(self, command: str) -> bool:
        try:
            os.write(self._command, command.encode() + b"\n")  # (unbuffered: nothing left to flush)
        except OSError:  # the child is gone: its reply pipe says how
            pass
        return self._receive()

    def run(self, i: int, repeat: int) -> PeerResult:
        done = len(self.result.runs.seconds)
        self.live = self._send(f"run {i} {repeat}")
        if len(self.result.runs.seconds) > done:
            self.log(_run_line(self.result, i, repeat))
        return self.result

    def finish(self) -> PeerResult:
        if self.pid:
            pid = self.pid
            self._send("finish")
            if self.pid:  # (a child that died finishing was waited for by _receive)
                os.waitpid(pid, 0)
                self.pid = 0
        _PARENT_FDS.difference_update((self._command, self._reply))
        os.close(self._command)
        self._replies.close()
        self.live = False
        return self.result


def run_interleaved(peers: Sequence[Peer], data: Any, n_records: int, repeat: int,
                    in_process: bool = False, log: Callable[[str], None] = print,
                    summarize: Callable[[Any], Any] = summarize) -> list[PeerResult]:
    """Every peer set up first (each in a forked child of its own, unless ``in_process``), then
    ``repeat`` rounds of one run of every peer in turn (``summarize`` digests each run's result,
    as in ``run_peer``). A shared host's speed drifts by tens of
    percent over minutes: timed back to back, a peer's runs caught one phase of the drift and the
    next peer another, so their ratios carried it; round by round every peer samples each
    phase alike. (Each child waits on its pipe between runs, so no two peers run at once.)"""
    forked = not in_process and hasattr(os, "fork")
    runners: list = []
    try:
        for peer in peers:
            if forked:
                runners.append(_ForkedRunner(peer, data, n_records, log, summarize))
            else:
                runners.append(PeerRunner(peer, n_records, log, summarize))
                runners[-1].setup(data)
            if not runners[-1].live:
                log(f"  {peer.name}: {runners[-1].result.status}: {runners[-1].result.error}")
        for i in range(repeat):
            for runner in runners:
                if runner.live:
                    runner.run(i, repeat)
    finally:
        error = None
        for runner in runners:  # every runner finishes (its child exits), whatever one raises
            try:
                runner.finish()
            except BaseException as e:  # noqa: BLE001
                error = error or e
        if error is not None:
            raise error
    return [runner.result for runner in runners]


def _fork_results(name: str, description: str, produce: Callable[[], Iterator[PeerResult]],
                  on_result: Callable[[PeerResult], None] | None = None
                  ) -> tuple[list[PeerResult], str | None]:
    """Run ``produce`` in a forked child that pickles each PeerResult to a pipe as soon as it
    is yielded; return the results that came back and, if the child died, how it died.
    ``on_result`` is called in the parent with each result as it arrives (progress)."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: run, send each pickled result, exit without cleanup handlers
        code = 0
        try:
            os.close(read_fd)
            with os.fdopen(write_fd, "wb") as pipe:
                try:
                    for result in produce():
                        pickle.dump(result, pipe)
                        pipe.flush()
                except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
                    pickle.dump(PeerResult(
                        name, description, status="failed", error=f"harness: {_describe(exc)}",
                        traceback=traceback.format_exc()), pipe)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    results = []
    with os.fdopen(read_fd, "rb") as pipe:
        while True:
            try:
                results.append(pickle.load(pipe))
            except (EOFError, pickle.UnpicklingError):
                break
            if on_result is not None:
                on_result(results[-1])
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0 or not results:
        tail = "" if results or os.WIFSIGNALED(status) else " and no result"
        return results, _how_it_ended(status) + tail
    return results, None


def _how_it_ended(status: int) -> str:
    """A child's wait status, in words: "crashed with SIGKILL", "exited with status 1"."""
    if os.WIFSIGNALED(status):
        return f"crashed with {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def run_isolated(name: str, description: str, fn: Callable[[], PeerResult]) -> PeerResult:
    """Run ``fn`` (which returns a PeerResult) in a forked child; report a crash as failed."""
    if not hasattr(os, "fork"):
        return fn()
    results, died = _fork_results(name, description, lambda: iter([fn()]))
    if results:
        return results[0]
    return PeerResult(name, description, status="failed", error=f"child process {died}")


def run_isolated_each(name: str, description: str, cases: Sequence[Any],
                      fn: Callable[[Sequence[Any]], Iterator[PeerResult]],
                      on_result: Callable[[PeerResult], None] | None = None) -> list[PeerResult]:
    """Run ``fn(cases)``, which yields one PeerResult per case in order, in forked children:
    a child that dies fails the case it was on, and the cases after it go to a fresh child."""
    if not hasattr(os, "fork"):
        results = []
        for r in fn(cases):
            results.append(r)
            if on_result is not None:
                on_result(r)
        return results
    results: list[PeerResult] = []
    while len(results) < len(cases):
        got, died = _fork_results(name, description, lambda: fn(cases[len(results):]), on_result)
        results += got[: len(cases) - len(results)]
        if died and len(results) < len(cases):
            results.append(PeerResult(name, description, status="failed",
                                      error=f"child process {died}"))
            if on_result is not None:
                on_result(results[-1])
        elif not got:
            break
    return results


@dataclass
class CrossCheck:
    reference: Summary | None  # the summary most peers agree on
    agreeing: list[str]
    mismatches: dict[str, Summary]

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reference": self.reference.as_dict() if self.reference else None,
            "agreeing": self.agreeing,
            "mismatches": {k: v.as_dict() for k, v in self.mismatches.items()},
        }


def cross_check(results: list[PeerResult]) -> CrossCheck:
    """Compare the summaries (total, groups, fingerprint) of the peers that ran."""
    summaries = {r.name: r.summary for r in results if r.summary is not None and r.ok}
    if not summaries:
        return CrossCheck(None, [], {})
    reference, _ = Counter(summaries.values()).most_common(1)[0]
    return CrossCheck(
        reference,
        agreeing=[n for n, s in summaries.items() if s == reference],
        mismatches={n: s for n, s in summaries.items() if s != reference},
    )


def add_common_arguments(p, peers, default_threads: int) -> None:
    """The command-line options every benchmark runner shares."""
    p.add_argument("--peers", default=",".join(peers), help=f"comma-separated, from: {', '.join(peers)}")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--campaigns", type=int, default=10_000)
    p.add_argument("--batch-rows", type=int, default=1 << 16)
    p.add_argument("--int-coded", action="store_true",
                   help="event_type as int32 codes (view == 0) instead of dictionary strings")
    p.add_argument("--threads", type=int, default=default_threads,
                   help="threads for polars, DuckDB and Spark local[N] (C, numpy: 1)")
    p.add_argument("--parallelism", type=int, default=1, help="grizzly-py parallelism")
    p.add_argument("--out", type=Path, default=default_results_dir(),
                   help="report directory (default: $GRIZZLY_CACHE_DIR/bench-results, "
                        "~/.cache/grizzly-py/bench-results)")
    p.add_argument("--no-save", action="store_true", help="print only, write no report")
    p.add_argument("--in-process", action="store_true",
                   help="run peers in this process instead of one forked child per peer")


def check_common_arguments(p, args, peers) -> None:
    args.peers = [n.strip() for n in args.peers.split(",") if n.strip()]
    unknown = [n for n in args.peers if n not in peers]
    if unknown:
        p.error(f"unknown peers {unknown}; choose from {list(peers)}")
    if args.repeat < 1 or args.rows < 1:
        p.error("--rows and --repeat must be >= 1")
