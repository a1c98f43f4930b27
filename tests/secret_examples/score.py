"""Recall of the capture redactor on the vendored example secrets, per placement, source, class and family.

    python -m tests.secret_examples.score [--positions N] [--families] [--json FILE]
                                          [--no-kingfisher | --unseen | --trufflehog CHECKOUT]

Runs the whole matrix (every example in every placement, SSE split at every
position unless `--positions` caps it) through the capture writer, scans the
disk like an attacker (see `matrix.py`) and prints:

1. recall per source x class x placement (gitleaks' own examples, the
   independent detect-secrets ones and the vendored second catalogue's, Kingfisher's,
   apart), and the expected cases' recall: a self-identifying value in every placement,
   a name-marked one where its credential name is beside it (a value only its name marks
   cannot be told from an id when placed without it: those cells are reported, not expected);
2. with `--families`, recall per family (rule / plugin) and placement group (a name-marked value
   placed without its name is counted under "unnamed" only);
3. the upstream `fps` examples the redactor alters, per source (reported
   apart; redacting a near miss next to a credential name is allowed).

`--unseen` scores Kingfisher's examples with Kingfisher's rules left out: the nearest stand-in in reach
for a scanner whose rules ctxtap does not vendor (its vendors that gitleaks also names are still
found by gitleaks' rules).

`--trufflehog CHECKOUT` scores the pattern tests of a scanner ctxtap neither vendors nor ever read rules
from: trufflehog's, from a checkout the user provides (AGPL-3.0: nothing of it is committed; see
`trufflehog.py`), with every ctxtap detector and both vendored catalogues in place; it prints the two
halves of its detectors apart (`trufflehog.held_out`).

Talks to nothing but the local disk; CPU-bound (one writer thread).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from tests.secret_examples.matrix import (
    PLACEMENTS,
    MatrixRun,
    count_false_positives,
    kingfisher_examples,
    load_examples,
    run_matrix,
    written_by_hand,
)

SOURCES = ("gitleaks", "detect-secrets", "kingfisher", "trufflehog")

SHORT = {
    "header-named": "hdr", "header-neutral": "hdr0", "query-named": "qry", "query-neutral": "qry0",
    "query-encoded": "qry%", "prose": "prose", "tool-json": "json", "json-escaped": "json2",
    "env-named": "env", "env-neutral": "env0", "yaml": "yaml", "toml": "toml", "upstream": "upstr", "tool-read": "read",
    "gzip-body": "gzip", "zstd-body": "zstd", "sse-whole": "sse", "sse-split2": "sse/2", "sse-split3": "sse/3",
    "ws-whole": "ws", "ws-split": "ws/2", "ws-client": "wsC",
}


def recall_table(run: MatrixRun, drawn_only: bool = False) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(source, class, placement) -> (caught, cases); `drawn_only`: the examples written by hand left out."""
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for i, case in enumerate(run.cases):
        if drawn_only and written_by_hand(case.example.secret or ""):
            continue
        cell = out[(case.example.source, case.example.cls, case.placement)]
        cell[1] += 1
        cell[0] += i not in run.leaks
    return {k: (v[0], v[1]) for k, v in out.items()}


# Where a name-marked value has no credential name beside it: reported in a column of its own.
UNNAMED = frozenset({"header-neutral", "query-neutral", "env-neutral", "prose"})


def family_table(run: MatrixRun) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    """(source, family) -> placement -> (caught, cases); a name-marked case without its name is under
    placement "unnamed"."""
    out: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for i, case in enumerate(run.cases):
        unnamed = case.example.cls == "name-marked" and case.placement in UNNAMED
        cell = out[(case.example.source, case.example.family)]["unnamed" if unnamed else case.placement]
        cell[1] += 1
        cell[0] += i not in run.leaks
    return {k: {p: (c[0], c[1]) for p, c in v.items()} for k, v in out.items()}


def expected(cls: str, placement: str) -> bool:
    """A case the redactor must keep off disk: a self-identifying value anywhere, a name-marked one
    beside its name."""
    return cls == "self-identifying" or (cls == "name-marked" and placement not in UNNAMED)


def format_expected(table: dict[tuple[str, str, str], tuple[int, int]]) -> str:
    """Per source: the expected cases' recall, and the worst placement's."""
    lines = []
    for source in SOURCES:
        by_placement: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for (src, cls, placement), (caught, total) in table.items():
            if src == source and expected(cls, placement):
                by_placement[placement][0] += caught
                by_placement[placement][1] += total
        caught = sum(c[0] for c in by_placement.values())
        total = sum(c[1] for c in by_placement.values())
        if not total:
            continue
        worst = min(by_placement, key=lambda p: by_placement[p][0] / by_placement[p][1])
        lines.append(f"  {source:15s} {caught:6d} of {total:6d} = {_pct(caught, total)} %   worst placement "
                     f"{worst} {_pct(*by_placement[worst])} %")
    return "\n".join(lines)


def _pct(caught: int, total: int) -> str:
    return "  -  " if not total else f"{100 * caught / total:5.1f}"


def format_recall(table: dict[tuple[str, str, str], tuple[int, int]]) -> str:
    placements = list(PLACEMENTS)
    head = f"{'source':15s} {'class':17s} {'cases':>6s} " + " ".join(f"{SHORT[p]:>5s}" for p in placements)
    lines = [head, "-" * len(head)]
    for source in SOURCES:
        for cls in ("self-identifying", "name-marked", "unmarked"):
            cells = [table.get((source, cls, p), (0, 0)) for p in placements]
            total = sum(c[1] for c in cells)
            if not total:
                continue
            row = " ".join(_pct(*c) for c in cells)
            lines.append(f"{source:15s} {cls:17s} {total:6d} {row}")
    lines.append("")
    lines.append("placements: " + ", ".join(f"{SHORT[p]}={p}" for p in placements))
    lines.append("(hdr0, qry0, env0: a neutral name; prose: no name; 'upstr': the example line as upstream wrote it; 'read': the same as Claude Code's Read shows a file, each line after its number)")
    return "\n".join(lines)


def format_families(table: dict[tuple[str, str], dict[str, tuple[int, int]]]) -> str:
    groups = ("header", "query", "body", "stream", "unnamed")
    lines = [f"{'source':15s} {'family':45s} " + " ".join(f"{g:>7s}" for g in groups)]
    for (source, family), cells in sorted(table.items()):
        by_group = Counter()
        totals = Counter()
        for placement, (caught, total) in cells.items():
            group = "unnamed" if placement == "unnamed" else PLACEMENTS[placement][0]
            by_group[group] += caught
            totals[group] += total
        lines.append(f"{source:15s} {family[:45]:45s} " + " ".join(f"{_pct(by_group[g], totals[g]):>7s}" for g in groups))
    return "\n".join(lines)


def format_halves(run: MatrixRun) -> str:
    """Expected recall, and the text as upstream wrote it, for the seen and the held-out half of the families."""
    from tests.secret_examples.trufflehog import held_out

    cells: dict[tuple[bool, str], list[int]] = defaultdict(lambda: [0, 0])
    for i, case in enumerate(run.cases):
        half = held_out(case.example.family)
        for key in ("expected" if expected(case.example.cls, case.placement) else None,
                    case.placement if case.placement in ("upstream", "tool-read") else None):
            if key is not None:
                cells[half, key][1] += 1
                cells[half, key][0] += i not in run.leaks
    return "\n".join(
        f"  {'held-out' if half else 'seen':9s}" + "".join(
            f"  {key} {cells[half, key][0]} of {cells[half, key][1]} = {_pct(*cells[half, key])} %"
            for key in ("expected", "upstream", "tool-read"))
        for half in (False, True))


def leave_out_kingfisher_rules() -> None:
    """Make the process's scanner from gitleaks' rules alone (Kingfisher's examples then stand for a
    catalogue ctxtap does not vendor: what its own detectors and gitleaks' find of them)."""
    from ctxtap.redaction import scanner
    from ctxtap.redaction.gitleaks import load_rules

    scanner.clear_caches()
    scanner._scanners["default"] = scanner.Scanner(load_rules(), None)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=_positive, default=None, help="cap split positions per secret (default: all)")
    parser.add_argument("--families", action="store_true", help="also print recall per family")
    parser.add_argument("--json", type=Path, help="write the tables as JSON")
    parser.add_argument("--no-kingfisher", action="store_true", help="leave out the second catalogue's examples")
    parser.add_argument("--unseen", action="store_true",
                        help="score only Kingfisher's examples with its rules left out (gitleaks' and ctxtap's own "
                             "detectors): how a scanner whose rules ctxtap does not vendor fares")
    parser.add_argument("--trufflehog", type=Path, metavar="CHECKOUT",
                        help="score only trufflehog's pattern tests, read from this checkout (never vendored)")
    args = parser.parse_args(argv)
    header, examples = load_examples()
    if args.trufflehog:
        from tests.secret_examples.trufflehog import trufflehog_examples

        loaded = trufflehog_examples(args.trufflehog)
        examples = loaded.examples
        print(f"trufflehog: {len(examples)} secrets from {loaded.files} detectors' tests "
              f"({loaded.unread} cases the Go reader skipped)")
    elif args.unseen:
        leave_out_kingfisher_rules()
        examples = kingfisher_examples()
    elif not args.no_kingfisher:
        examples = examples + kingfisher_examples()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = run_matrix(Path(tmp) / "cap", examples, positions=args.positions)
        elapsed = time.perf_counter() - t0
    table = recall_table(run)
    if args.trufflehog:
        print("corpus: trufflehog's pattern tests (a scanner ctxtap does not vendor)")
    elif args.unseen:
        print("corpus: kingfisher's examples, with its rules left out (an unvendored catalogue's stand-in)")
    else:
        print(f"corpus: gitleaks {header['gitleaks']}, detect-secrets {header['detect_secrets']}"
              + ("" if args.no_kingfisher else ", kingfisher (redaction/rules/kingfisher.json)"))
    print(f"{len(run.cases)} cases, {len(run.leaks)} leaked; {elapsed:.1f} s "
          f"(build {run.seconds['build']:.1f}, write+finalize {run.seconds['write']:.1f}, "
          f"attacker scan {run.seconds['scan']:.1f}; CPU-bound, one writer thread)\n")
    print("recall (% of cases with nothing of the secret on disk)")
    print(format_recall(table))
    print("\nexpected cases (self-identifying anywhere, name-marked beside its name): kept off disk")
    print(format_expected(table))
    print("the same, examples drawn at random only (placeholders written by hand, `matrix.written_by_hand`, left out)")
    print(format_expected(recall_table(run, drawn_only=True)))
    if args.trufflehog:
        print("\nby half of trufflehog's detectors (a fixed hash of the name; rules written seeing the first only)")
        print(format_halves(run))
    if args.families:
        print("\nrecall per family")
        print(format_families(family_table(run)))
    fps = count_false_positives(examples)
    print("\nupstream fps examples altered (reported apart):")
    for source, (altered, total) in sorted(fps.items()):
        print(f"  {source}: {altered} of {total}")
    if args.json:
        args.json.write_text(json.dumps({
            "recall": [{"source": s, "class": c, "placement": p, "caught": v[0], "cases": v[1]}
                       for (s, c, p), v in sorted(table.items())],
            "fps": {s: {"altered": a, "total": t} for s, (a, t) in fps.items()},
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
