"""The instrumented variant's profiling code, and the profile it leaves in the state block.

Grizzly section 6.1.1: the instrumented variant is the generic pipeline plus profiling
instructions that each operator contributes. Here:

- filters: one counter per predicate of the rows it passes, over every row (all predicates are
  evaluated in the instrumented variant, so each count is that predicate's own selectivity);
- window keys, on a sample of the selected rows (one in ``CodegenOptions.profile_sample``, by
  row index): how many were sampled and how many had a null key, the minimum and maximum of the
  first key word, a HyperLogLog sketch of the key tuples (distinct-key estimate) and a
  heavy-hitter sketch (per hash bucket, the majority key with its vote count: Boyer-Moore).

Counters live in a region of the state block (``PROFILE_*`` word offsets from
``GeneratedPipeline.profile_base``); each worker has its own state block, so the counters need no
atomics. ``Profile.read`` sums the workers' regions; ``reset`` starts a new profiling phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import abi

MAX_PREDICATES = 16     # predicates beyond these are not profiled (and keep their order)
HLL_REGISTERS = 64
SKETCH_SLOTS = 64

PROFILE_ROWS_SCANNED = 0   # rows whose predicates were counted
PROFILE_ROWS_SAMPLED = 1   # selected rows whose keys were sampled
PROFILE_NULL_KEYS = 2      # sampled rows with a null key
PROFILE_KEY_MIN = 3        # of the first key word, over sampled rows with a non-null key
PROFILE_KEY_MAX = 4
PROFILE_PREDICATES = 8     # MAX_PREDICATES words: rows passing predicate i
PROFILE_HLL = PROFILE_PREDICATES + MAX_PREDICATES             # HLL_REGISTERS words
PROFILE_SKETCH = PROFILE_HLL + HLL_REGISTERS                  # SKETCH_SLOTS x (hash, votes, key word)
PROFILE_WORDS = PROFILE_SKETCH + 3 * SKETCH_SLOTS


def reset(state: np.ndarray, base: int) -> None:
    """Start a new profiling phase in one state block."""
    state[base:base + PROFILE_WORDS] = 0
    state[base + PROFILE_KEY_MIN] = abi.INT64_MAX
    state[base + PROFILE_KEY_MAX] = abi.INT64_MIN


@dataclass
class Profile:
    """What an instrumented phase measured, summed over the workers' state blocks."""

    rows_scanned: int = 0
    rows_sampled: int = 0
    null_keys: int = 0
    key_min: int | None = None
    key_max: int | None = None
    predicate_passed: list[int] = field(default_factory=list)
    distinct_keys: float = 0.0           # HyperLogLog estimate over the sampled rows
    heavy_hitters: list[tuple[int, float]] = field(default_factory=list)  # (key word, share of sampled rows)
    sample_every: int = 0                # the instrumented variant sampled one selected row in this
                                         # many (by row index; 0: unknown)
    held_keys: tuple[int, int] | None = None  # (min, max) first key word of keys the window state
                                              # is known to hold (None: unknown); a dense range
                                              # must hold them, as the state moves into it
    window_keys: float | None = None  # the keys one window table will hold, extrapolated from the
                                      # open windows (None: unknown); bounds the hashed state

    @property
    def kept_share(self) -> float | None:
        """The share of scanned rows that passed every filter, from the sampled ones (None:
        no row scanned, or the sampling rate unknown)."""
        if not self.rows_scanned or not self.sample_every:
            return None
        return min(1.0, self.rows_sampled * self.sample_every / self.rows_scanned)

    @property
    def selectivities(self) -> list[float]:
        """Per predicate, the fraction of scanned rows it passes."""
        n = max(self.rows_scanned, 1)
        return [p / n for p in self.predicate_passed]

    @property
    def top_share(self) -> float:
        """The largest share of sampled rows one key has (a lower bound), 0 when unknown."""
        return self.heavy_hitters[0][1] if self.heavy_hitters else 0.0

    def summary(self) -> dict:
        return {"rows_scanned": self.rows_scanned, "rows_sampled": self.rows_sampled,
                "null_keys": self.null_keys, "key_min": self.key_min, "key_max": self.key_max,
                "selectivities": [round(s, 4) for s in self.selectivities],
                "kept_share": None if self.kept_share is None else round(self.kept_share, 4),
                "distinct_keys": round(self.distinct_keys),
                "top_share": round(self.top_share, 4),
                **({"held_keys": list(self.held_keys)} if self.held_keys is not None else {})}

    @classmethod
    def read(cls, states: list[np.ndarray], base: int, predicates: int) -> "Profile":
        regions = [s[base:base + PROFILE_WORDS] for s in states]
        counts = [[int(r[w]) for w in (PROFILE_ROWS_SCANNED, PROFILE_ROWS_SAMPLED, PROFILE_NULL_KEYS)] for r in regions]
        p = cls(rows_scanned=sum(c[0] for c in counts), rows_sampled=sum(c[1] for c in counts),
                null_keys=sum(c[2] for c in counts))
        lo = min(int(r[PROFILE_KEY_MIN]) for r in regions)
        hi = max(int(r[PROFILE_KEY_MAX]) for r in regions)
        if lo <= hi:
            p.key_min, p.key_max = lo, hi
        n = min(predicates, MAX_PREDICATES)
        p.predicate_passed = [sum(int(r[PROFILE_PREDICATES + i]) for r in regions) for i in range(n)]
        registers = np.max([r[PROFILE_HLL:PROFILE_HLL + HLL_REGISTERS] for r in regions], axis=0)
        p.distinct_keys = hll_estimate(registers) if p.rows_sampled else 0.0
        votes: dict[int, tuple[int, int]] = {}
        for r in regions:
            sketch = r[PROFILE_SKETCH:PROFILE_SKETCH + 3 * SKETCH_SLOTS].reshape(SKETCH_SLOTS, 3)
            for h, count, key in sketch:
                if count > 0:
                    old = votes.get(int(h), (0, int(key)))
                    votes[int(h)] = (old[0] + int(count), int(key))
        if p.rows_sampled:
            ranked = sorted(votes.values(), reverse=True)[:8]
            p.heavy_hitters = [(key, count / p.rows_sampled) for count, key in ranked]
        return p


def hll_estimate(registers: np.ndarray) -> float:
    """HyperLogLog (Flajolet et al.) with the small-range correction (linear counting)."""
    m = len(registers)
    alpha = 0.709 if m == 64 else 0.7213 / (1 + 1.079 / m)
    raw = alpha * m * m / float(np.sum(np.power(2.0, -registers.astype(np.float64))))
    zeros = int(np.count_nonzero(registers == 0))
    if raw <= 2.5 * m and zeros:
        return m * math.log(m / zeros)
    return raw
