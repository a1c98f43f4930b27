"""Token growth of a thread: a quadratic model fitted to the input series.

With a stable prefix p and m tokens added per call, call i reads about p + i*m
tokens and n calls read total(n) = n*p + m*n(n+1)/2: the second term is why
cumulative input grows quadratically when every call resends the history.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Fit:
    p: float
    m: float
    r2: float | None

    def total(self, n: int) -> float:
        return n * self.p + self.m * n * (n + 1) / 2


def fit(inputs: list[int]) -> Fit | None:
    """Least-squares fit of input_i = p + m*i (i = 1..n); None for fewer than 2 points."""
    n = len(inputs)
    if n < 2:
        return None
    xs = range(1, n + 1)
    mean_x = (n + 1) / 2
    mean_y = sum(inputs) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, inputs, strict=True))
    m = sxy / sxx
    p = mean_y - m * mean_x
    ss_tot = sum((y - mean_y) ** 2 for y in inputs)
    ss_res = sum((y - (p + m * x)) ** 2 for x, y in zip(xs, inputs, strict=True))
    r2 = None if ss_tot == 0 else 1 - ss_res / ss_tot
    return Fit(p, m, r2)


def acceleration(inputs: list[int]) -> tuple[int | None, int | None, float | None]:
    """(index, increment, median increment): the largest jump if it exceeds twice the median jump."""
    if len(inputs) < 3:
        return None, None, None
    increments = [b - a for a, b in zip(inputs, inputs[1:], strict=False)]
    median = statistics.median(increments)
    best = max(range(len(increments)), key=lambda i: increments[i])
    if increments[best] > 2 * max(median, 0) and increments[best] > 0:
        return best + 1, increments[best], median
    return None, None, median
