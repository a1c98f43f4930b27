"""The vendored example secrets of gitleaks and detect-secrets in every placement, through the real writer.

What this half of the redaction work controls is asserted exactly: a secret
split across SSE deltas (two or three, at the chosen positions, in nine
stream shapes) or across WebSocket frames is caught whenever the same secret
whole in one delta is, and no fragment of it survives. Recall itself depends
on the rules: the issue's 99 % target is asserted on every cell it names (self-
identifying formats everywhere, name-marked values where their name is present),
and every other cell at a floor just below today's figure, so nothing regresses
(the table: `python -m tests.secret_examples.score`).

`CTXTAP_SECRET_POSITIONS=all` runs every split position (the scoring command
does by default); CI uses a few spread over each secret to stay quick.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict

import pytest

from tests.secret_examples.matrix import (
    EXAMPLES,
    PLACEMENTS,
    count_false_positives,
    distinct_secrets,
    load_examples,
    run_matrix,
    split_positions,
)
from tests.secret_examples.score import recall_table

POSITIONS = None if os.environ.get("CTXTAP_SECRET_POSITIONS") == "all" else int(
    os.environ.get("CTXTAP_SECRET_POSITIONS", "4"))
ISSUE_TARGET = 0.99
SPLITS = {"sse-whole": ("sse-split2", "sse-split3"), "ws-whole": ("ws-split",)}

# The issue's targets: self-identifying formats in every placement, name-marked values where a name is present.
ISSUE_TARGETS = frozenset(
    (source, cls, placement)
    for source in ("gitleaks", "detect-secrets")
    for cls in ("self-identifying", "name-marked")
    for placement, (_, named) in PLACEMENTS.items()
    if cls == "self-identifying" or named
)
# Every other cell (a name-marked value with no name beside it) at today's recall rounded down to 5 points:
# a regression guard.
FLOORS = {
    ('detect-secrets', 'name-marked', 'env-neutral'): 0.00,
    ('detect-secrets', 'name-marked', 'header-neutral'): 0.00,
    ('detect-secrets', 'name-marked', 'prose'): 0.00,
    ('detect-secrets', 'name-marked', 'query-neutral'): 0.00,
    ('gitleaks', 'name-marked', 'env-neutral'): 0.05,
    ('gitleaks', 'name-marked', 'header-neutral'): 0.05,
    ('gitleaks', 'name-marked', 'prose'): 0.05,
    ('gitleaks', 'name-marked', 'query-neutral'): 0.05,
}


@pytest.fixture(scope="module")
def corpus():
    return load_examples()


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, corpus):
    return run_matrix(tmp_path_factory.mktemp("secret-examples") / "cap", corpus[1], positions=POSITIONS)


def test_corpus_is_vendored_with_its_sources(corpus) -> None:
    header, examples = corpus
    assert header["gitleaks"].startswith("v8.") and header["detect_secrets"].startswith("v1.")
    by = defaultdict(set)
    for ex in examples:
        by[(ex.source, ex.label)].add(ex.family)
        assert ex.file and ex.line > 0
    tps = [ex for ex in examples if ex.label == "tp"]
    assert sum(1 for ex in tps if not ex.secret) <= len(tps) // 100  # a few upstream tps are file paths
    assert len(by[("gitleaks", "tp")]) >= 200 and len(by[("gitleaks", "fp")]) >= 75  # rules with examples
    assert len(by[("detect-secrets", "tp")]) >= 15
    assert {ex.cls for ex in examples} >= {"self-identifying", "name-marked"}


def test_generated_values_come_from_their_regexes() -> None:
    """gitleaks draws many true positives from a regex at test time; ours were drawn once, seeded."""
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines()[1:]]
    drawn = [r for r in rows if r.get("generated")]
    assert len(drawn) >= 200
    for row in drawn:
        for pattern in row["generated"]:
            assert re.search(pattern, row["text"]), row["id"]


def test_split_streams_catch_exactly_what_whole_streams_catch(matrix) -> None:
    whole: dict[tuple[str, str], bool] = {}
    for i, case in enumerate(matrix.cases):
        if case.placement in SPLITS:
            whole[(case.example.id, case.placement)] = i not in matrix.leaks
    missed = []
    for i, case in enumerate(matrix.cases):
        for base, splits in SPLITS.items():
            if case.placement in splits and (i not in matrix.leaks) != whole[(case.example.id, base)]:
                missed.append((case.example.id, case.placement, case.detail))
    assert missed == []
    splits = sum(1 for c in matrix.cases if c.placement in ("sse-split2", "sse-split3", "ws-split"))
    assert splits >= 3 * len(distinct_secrets(load_examples()[1]))


def test_recall_meets_the_issue_targets(matrix) -> None:
    """Split placements are held to their whole placement per secret (above) as well."""
    table = recall_table(matrix)
    measured = {cell for cell in table if cell in ISSUE_TARGETS}
    assert measured == {cell for cell in ISSUE_TARGETS if cell[:2] in {c[:2] for c in table}}  # none left out
    below = {cell: f"{c}/{t}" for cell, (c, t) in table.items() if cell in ISSUE_TARGETS and c / t < ISSUE_TARGET}
    assert below == {}


def test_recall_holds_its_floors_everywhere_else(matrix) -> None:
    table = {cell: v for cell, v in recall_table(matrix).items() if cell not in ISSUE_TARGETS}
    assert set(FLOORS) == set(table)  # every cell has a floor: a new placement or class must get one
    below = {cell: (f"{c}/{t}", FLOORS[cell]) for cell, (c, t) in table.items() if c / t < FLOORS[cell]}
    assert below == {}


def test_upstream_false_positive_examples_are_counted_apart(corpus) -> None:
    fps = count_false_positives(corpus[1])
    assert set(fps) == {"gitleaks", "detect-secrets"}
    for altered, total in fps.values():
        assert 0 <= altered <= total and total >= 50


def test_split_positions_spread_and_cap() -> None:
    assert split_positions(5, None) == [1, 2, 3, 4]
    assert split_positions(40, 1) == [20]  # one point: the middle (it divided by zero)
    assert split_positions(40, 3) == [1, 20, 39]
    with pytest.raises(ValueError, match="at least 1"):
        split_positions(40, 0)


def test_placeholders_are_told_from_keys_drawn_at_random() -> None:
    """The benchmarks count examples written by hand apart: a placeholder must be caught, and a key drawn at
    random almost never (the test is independent of the detectors' own)."""
    import random
    import string

    from tests.secret_examples.matrix import written_by_hand

    rng = random.Random(8)
    alnum = string.ascii_letters + string.digits
    drawn = [f"qzv_{''.join(rng.choice(alnum) for _ in range(40))}" for _ in range(2000)]
    assert sum(map(written_by_hand, drawn)) <= 4
    for placeholder in ("AKIAZZZZZZZZZZZZZZZZ", "sk_live_YOUR_KEY_HERE_0000", "xoxb-EXAMPLE-TOKEN-EXAMPLE",
                        "glpat-abcd1234efgh5678ijkl", "ghp_fakefakefakefakefake012345678901"):
        assert written_by_hand(placeholder), placeholder


def test_kingfisher_examples_its_own_filter_drops_are_not_expected() -> None:
    """A Kingfisher example whose secret is at or under its rule's entropy floor is one Kingfisher itself
    does not report (a username, `$Password` in a rule's own examples): it is scored, not expected."""
    from tests.secret_examples.matrix import KINGFISHER, kingfisher_examples, kingfisher_reports

    assert not kingfisher_reports("dev_admin", 3.3)  # 2.95 bits
    assert not kingfisher_reports("abab", 1.0)  # exactly the floor: dropped, as Kingfisher's `<=` does
    assert kingfisher_reports("q7Xk2Rt9pWm4Lz8v", 3.3)
    floors = {r["id"]: r.get("min_entropy") or 0.0 for r in json.loads(KINGFISHER.read_text())["rules"]}
    examples = kingfisher_examples()
    under = [e for e in examples if not kingfisher_reports(e.secret, floors[e.family])]
    assert under, "the vendored catalogue has examples under their own floor"
    assert all(e.cls == "unmarked" for e in under)
    assert any(e.cls != "unmarked" for e in examples if kingfisher_reports(e.secret, floors[e.family]))
