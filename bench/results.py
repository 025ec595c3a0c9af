# SPDX-License-Identifier: MIT
"""Shared by bench/report.py and bench/fio-gap: loading the guests' JSON
Lines, medians with their spread, ratios, and the verdict rule.

The verdict rule (docs/results.md says it in words): a cell is "faster" or
"slower" only when the two kernels' ranges over the rounds do not overlap
and the ratio of their medians lies outside the cell's A/A band: how far
the ratio of medians between two runs of the baseline kernel, measured the
same way, moves under a bootstrap of their rounds (aa_band(), as a factor
either way, never below the measured A/A ratio). Anything else is "no change", whatever its sign; with
fewer than MIN_ROUNDS rounds on a side there is no verdict ("-").
"""
import json
import math
import random
import statistics


def matrix(path):
    """The cells of a benchmark matrix file: [(cell, uring-overwrite
    options)]. Lines: "bench <cell> <options>"; "#" starts a comment."""
    cells = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            p = line.split(None, 2)
            if not p or p[0].startswith("#"):
                continue
            if p[0] != "bench" or len(p) < 2:
                raise ValueError("{}:{}: want 'bench <cell> <options>', got "
                                 "'{}'".format(path, n, line.strip()))
            cells.append((p[1], p[2].strip() if len(p) > 2 else ""))
    return cells


def load_jsonl(paths):
    """Records from JSON Lines files; unparsable lines are counted."""
    recs, bad = [], 0
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    bad += 1
    return recs, bad


def dig(d, *keys):
    """d[k1][k2]...; None when a level is missing or None."""
    for k in keys:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d


class Series:
    """The values of one quantity over the rounds of one kernel."""

    def __init__(self, values):
        self.v = sorted(x for x in values if x is not None and
                        not (isinstance(x, float) and math.isnan(x)))

    def __len__(self):
        return len(self.v)

    @property
    def median(self):
        return statistics.median(self.v) if self.v else None

    @property
    def lo(self):
        return self.v[0] if self.v else None

    @property
    def hi(self):
        return self.v[-1] if self.v else None


def ratio(a, b):
    """a / b of two medians, None if either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def band(aa_ratio):
    """One A/A ratio of medians as a factor >= 1."""
    if aa_ratio is None or aa_ratio <= 0:
        return None
    return max(aa_ratio, 1 / aa_ratio)


# The A/A band: this quantile of the A/A ratio of medians (as a factor
# either way) over bootstrap resamples of the two baseline runs' rounds.
BAND_QUANTILE = 0.95
BAND_RESAMPLES = 2000


def aa_band(base, aa):
    """The A/A band of a cell as a factor >= 1: how far the ratio of
    medians of two runs of the same kernel moves when each run's rounds
    are resampled with replacement (BAND_RESAMPLES times, a fixed seed, so
    a report is reproducible), at BAND_QUANTILE; never below the measured
    A/A ratio itself. None with fewer than MIN_ROUNDS rounds on a side or
    a median of 0."""
    if len(base) < MIN_ROUNDS or len(aa) < MIN_ROUNDS:
        return None
    point = band(ratio(aa.median, base.median))
    if point is None:
        return None
    rnd = random.Random(0)
    factors = []
    for _ in range(BAND_RESAMPLES):
        b = statistics.median(rnd.choices(base.v, k=len(base.v)))
        a = statistics.median(rnd.choices(aa.v, k=len(aa.v)))
        f = band(ratio(a, b))
        if f is None:
            return None
        factors.append(f)
    factors.sort()
    q = factors[min(len(factors) - 1, int(BAND_QUANTILE * len(factors)))]
    return max(point, q)


# Fewer rounds than this on either side give no verdict: a range of one or
# two values says nothing about the spread.
MIN_ROUNDS = 3


def verdict(base, pat, aa_band, higher_is_better=True):
    """"faster", "slower" or "no change" (see the module's docstring);
    "-" when a side has fewer than MIN_ROUNDS values or the A/A band is
    missing."""
    r = ratio(pat.median, base.median)
    if r is None or aa_band is None or len(base) < MIN_ROUNDS or \
            len(pat) < MIN_ROUNDS:
        return "-"
    apart_up = pat.lo > base.hi
    apart_down = pat.hi < base.lo
    if apart_up and r > aa_band:
        return "faster" if higher_is_better else "slower"
    if apart_down and r < 1 / aa_band:
        return "slower" if higher_is_better else "faster"
    return "no change"
