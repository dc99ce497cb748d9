"""When to stop timing a candidate early: once it is clearly slower than a target speedup (a sequential sign test).

A search that screens many candidates only needs to know, of a candidate that is slower than the best one found
so far, that it is slower; timing it for the full number of rounds adds nothing. The gate times the original and
the candidate interleaved, one run of each per round, so every round gives one paired speedup `r_i = original_i /
candidate_i`. The null hypothesis is that the candidate reaches the target: its per-round speedup is at least the
target with probability at least 1/2 (the median speedup is at least the target). Under it, the number `k` of the
first `n` rounds with `r_i < target` is at most Binomial(n, 1/2) in distribution, whatever the distribution of
the timings (a sign test: no normality, no equal variances).

Timing stops at look `j` (after `LOOKS[j]` rounds) when `P(Binomial(n, 1/2) >= k) <= alpha / 2^(j+1)`. The levels
sum to at most `alpha`, so the chance of stopping a candidate that does reach the target is at most `alpha` over
all looks together (alpha spending, Bonferroni over the looks). A stopped candidate is never verified: the search
only learns that it is slower than its best.

This module runs in the worker process; it imports only the standard library.
"""

from __future__ import annotations

import math

ALPHA = 0.05
LOOKS = (6, 10, 16, 24, 36, 54, 80, 120, 180, 270, 400, 600, 900, 1350, 2000)
"""Rounds after which the test looks (roughly geometric, so that a long measurement is looked at only a few times)."""


def binomial_tail(n: int, k: int) -> float:
    """Return P(X >= k) for X ~ Binomial(n, 1/2)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2.0**n


def look_index(rounds: int) -> int | None:
    """Return the index of the look taken after this many rounds, or None when no look is due."""
    try:
        return LOOKS.index(rounds)
    except ValueError:
        return None


def clearly_below(original_ms: list[float], candidate_ms: list[float], target: float, alpha: float = ALPHA) -> bool:
    """Return whether the paired rounds so far show the candidate's speedup is below `target` (at a look only)."""
    n = min(len(original_ms), len(candidate_ms))
    j = look_index(n)
    if j is None or target <= 0:
        return False
    slower = sum(1 for o, c in zip(original_ms[:n], candidate_ms[:n], strict=True) if c > 0 and o / c < target)
    return binomial_tail(n, slower) <= alpha / 2.0 ** (j + 1)
