"""`expected_entropy` is what random bodies score: the token detectors' randomness checks compare with it."""

from __future__ import annotations

import random
import string

import pytest

from ctxtap.redaction.entropy import expected_entropy, shannon_entropy

ALPHABETS = {10: string.digits, 16: "0123456789abcdef", 32: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
             36: string.ascii_lowercase + string.digits, 62: string.ascii_letters + string.digits,
             64: string.ascii_letters + string.digits + "-_"}


@pytest.mark.parametrize(("alphabet", "n"), [(62, 20), (62, 40), (64, 27), (36, 24), (32, 16), (16, 32),
                                             (16, 200), (10, 12), (62, 600)])
def test_expected_entropy_is_the_mean_of_random_bodies(alphabet: int, n: int) -> None:
    rng = random.Random(alphabet * 1000 + n)
    chars = ALPHABETS[alphabet]
    samples = [shannon_entropy("".join(rng.choice(chars) for _ in range(n)).encode()) for _ in range(2000)]
    assert expected_entropy(alphabet, n) == pytest.approx(sum(samples) / len(samples), abs=0.02)


def test_expected_entropy_is_continuous_where_its_two_forms_meet() -> None:
    for alphabet in (16, 32, 62, 64):
        below, at = expected_entropy(alphabet, 8 * alphabet - 1), expected_entropy(alphabet, 8 * alphabet)
        assert 0 <= at - below < 0.01


def test_a_short_body_of_few_symbols_scores_well_under_a_random_one() -> None:
    """An SVG path's digits and few letters: the check the detectors make (80 % of a random body's score)."""
    path = b"120h80v120h120v80H760v120h"
    assert shannon_entropy(path) < 0.8 * expected_entropy(62, len(path))
