"""The format-based vendor-token detector alone: recall on held-out and seen families, false positives.

    python benchmarks/bench_token_detector.py [--families [--show-held-out]] [--backend hyperscan|python]
                                              [--installed MB]

`redaction/vendor_tokens.py` recognises keys by structure, not by a list of heads. To
estimate how it does on vendors no list knows, a third of the self-identifying families of the
secret-example matrix was drawn at random before it was written
(`tests/secret_examples/heldout_families.txt`) and is scored apart from the rest. Only this
detector runs (its trigger in an engine of its own, no vendored or ctxtap rule, no name rule):
each true positive is placed as the matrix places it (neutral header and query, percent-encoded
query, prose, JSON, JSON in JSON, env with and without a name, YAML, TOML, the upstream line),
and a case counts as kept off disk when no 8-byte fragment of the secret survives the detector's
spans. False positives: the lines of the ordinary-content corpus (`tests/redaction/ordinary_content.py`)
the detector alone alters; with `--installed MB`, also its spans in the text files of the installed
packages (code and docs written by others, the closest thing to an agent's tool results at hand).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import sysconfig
import time
import zlib
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxtap.redaction import token_shapes, url_tokens, vendor_tokens  # noqa: E402
from ctxtap.redaction.detector import ALPHABETS  # noqa: E402
from ctxtap.redaction.engine import build_engine, hyperscan_available  # noqa: E402
from ctxtap.redaction.spans import Span, merge_spans  # noqa: E402
from tests.secret_examples.matrix import (  # noqa: E402
    body_text,
    carried,
    distinct_secrets,
    load_examples,
    written_by_hand,
)

HELDOUT = ROOT / "tests" / "secret_examples" / "heldout_families.txt"
BODY_PLACEMENTS = ("prose", "tool-json", "json-escaped", "env-named", "env-neutral", "yaml", "toml", "upstream")
FRAGMENT = 8
# The structure the detector is written for: a head of letters (digits after), a separator, 20+ more.
SHAPED_RE = re.compile(r"[A-Za-z][A-Za-z0-9]{1,13}[_.\-]\S{20,}")


def heldout_families() -> set[str]:
    return {line.strip() for line in HELDOUT.read_text().splitlines() if line.strip() and not line.startswith("#")}


class Alone:
    """The token detectors' triggers in an engine of their own (vendor_tokens: a head, a separator and a
    random body; token_shapes: bech32 secrets, signed JSON tokens, glued heads; url_tokens: a random segment of
    a URL's path), and their verifiers."""

    def __init__(self, backend: str | None) -> None:
        self.detectors = (vendor_tokens.DETECTOR, token_shapes.DETECTOR, url_tokens.DETECTOR)
        triggers = [t for d in self.detectors for t in d.triggers]
        self.engine = build_engine(triggers, backend)

    def spans(self, data: bytes) -> list[Span]:
        hits = self.engine.scan(data).by_trigger
        out: list[Span] = []
        first = 0
        for detector in self.detectors:
            own = [hits.get(first + i, []) for i in range(len(detector.triggers))]
            first += len(detector.triggers)
            if any(own):
                detector.find(data, own, out)
        return merge_spans(out, [])

    def redact(self, text: str) -> str:
        data = text.encode()
        parts, last = [], 0
        for s in self.spans(data):
            parts += [data[last : s.start], b"[REDACTED]"]
            last = s.end
        parts.append(data[last:])
        return b"".join(parts).decode("utf-8", "replace")


def placements(secret: str, ex) -> dict[str, str]:  # noqa: ANN001 - matrix.Example
    out = {"header-neutral": f"X-Thing: {secret}", "query-neutral": f"/v1/x?q={secret}&page=2",
           "query-encoded": f"/v1/x?q={quote(secret, safe='')}&page=2"}
    out.update({p: body_text(ex, p) for p in BODY_PLACEMENTS})
    return out


def leaked(secret: str, after: str) -> bool:
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret)[1:-1])[1:-1], quote(secret, safe="")}
    for form in forms:
        frags = [form] if len(form) <= FRAGMENT else [form[i : i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1)]
        if any(f in after for f in frags):
            return True
    return False


def score(alone: Alone) -> dict[str, dict[str, list[int]]]:
    """group -> family -> [kept, cases] over every held-out / seen true positive in every placement; the
    groups `…, drawn at random` leave out the examples written by hand."""
    _, examples = load_examples()
    held = heldout_families()
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for ex in distinct_secrets(examples):
        if ex.cls != "self-identifying":
            continue
        fam = f"{ex.source}:{ex.family}"
        secret = carried(ex)
        group = "held-out" if fam in held else "seen"
        cells = [out[group][fam]]
        if SHAPED_RE.fullmatch(secret):
            cells.append(out[group + ", shaped"][fam])
        if not written_by_hand(ex.secret or secret):
            cells.append(out[group + ", drawn at random"][fam])
        for text in placements(secret, ex).values():
            kept = not leaked(ex.secret or secret, alone.redact(text))
            for cell in cells:
                cell[1] += 1
                cell[0] += kept
    return out


KINGFISHER = ROOT / "redaction" / "rules" / "kingfisher.json"
GITLEAKS = ROOT / "redaction" / "rules" / "gitleaks.toml"
_LITERAL_HEAD = re.compile(r"^(?:\(\?[a-z]+\))?(?:\\b)?\((?!\?)([A-Za-z0-9_-]{3,})(?=[\[(\\])")


def literal_head(pattern: str) -> str | None:
    """The literal characters a rule's match starts with (`aio_` of `\\b(aio_[a-zA-Z0-9]{28})\\b`), or None:
    a rule whose match starts with a fixed head is for a self-identifying token."""
    text = re.sub(r"(?m)#.*$", "", pattern)
    text = re.sub(r"\s+", "", text) if "(?x" in pattern[:8] else text
    m = _LITERAL_HEAD.match(text)
    return m.group(1) if m and not m.group(1).isdigit() else None


def third_scanner_cases() -> dict[str, list[str]]:
    """A third scanner's self-identifying examples: every Kingfisher rule whose match starts with a fixed
    head and whose head no gitleaks rule holds (vendors neither the matrix nor gitleaks knows), with the
    secrets its own examples carry (its pattern's first group). Nothing here was read to write the detector."""
    rules = json.loads(KINGFISHER.read_text())["rules"]
    gitleaks = GITLEAKS.read_text()
    out: dict[str, list[str]] = {}
    for rule in rules:
        head = literal_head(rule.get("pattern", ""))
        if head is None or len(head) < 3 or head in gitleaks:
            continue
        try:
            rx = re.compile(rule["pattern"])
        except re.error:
            continue
        found = []
        for example in rule.get("examples", []):
            m = rx.search(example)
            if m:
                found.append(m.group(1) if m.groups() and m.group(1) else m.group(0))
        found = [f for f in found if f.lower().startswith(head.lower())]  # the token itself starts with the head
        if found:
            out[rule["id"]] = sorted(set(found))
    return out


def third_half_held_out(rule_id: str) -> bool:
    """Half of the third scanner's rules, by a fixed hash of the id, kept out of sight while rules are
    written (the other half has been read while writing rules since the split was made: only this half still scores the unseen)."""
    return zlib.crc32(rule_id.encode()) % 2 == 1


def score_third(alone: Alone) -> dict[str, list[int]]:
    """rule -> [kept, cases] for the third scanner's secrets in the neutral placements."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for rule, secrets in third_scanner_cases().items():
        for secret in secrets:
            for text in (f"X-Thing: {secret}", f"/v1/x?q={secret}&page=2", f"the key is {secret} for now",
                         json.dumps({"output": f"found {secret}"}), f"value: {secret}"):
                cell = out[rule]
                cell[1] += 1
                cell[0] += not leaked(secret, alone.redact(text))
    return out


def ordinary(alone: Alone) -> list[tuple[str, int, int, list[str]]]:
    """(class, altered lines, lines, examples) over the ordinary-content corpus, raw and in JSON."""
    from tests.redaction.ordinary_content import CLASSES

    rows = []
    for name, make in CLASSES.items():
        altered = total = 0
        shown: list[str] = []
        for text in make(random.Random(name)):
            for body in (text, json.dumps({"content": text})):
                after = alone.redact(body)
                before_lines = body.split("\n") if body is text else json.loads(body)["content"].split("\n")
                try:
                    after_text = after if body is text else json.loads(after)["content"]
                except ValueError:
                    altered += len(before_lines)
                    continue
                after_lines = after_text.split("\n")
                total += len(before_lines)
                for b, a in zip(before_lines, after_lines, strict=False):
                    if a != b:
                        altered += 1
                        if len(shown) < 3:
                            shown.append(b.strip()[:100])
        rows.append((name, altered, total, shown))
    return rows


RANDOM_ALPHABETS = {"letters+digits": "alnum", "letters": "letters", "lower+digits": "lower", "base64url": "b64url",
                    "base64": "b64"}
RANDOM_LENGTHS = (20, 24, 32, 40)


def random_bodies(alone: Alone, per_cell: int = 500) -> dict[str, list[float]]:
    """alphabet -> recall at each of RANDOM_LENGTHS: a head of two to six letters, `_`, a body drawn at
    random, in a sentence (the structure the detector is written for, with no vendor's example in it)."""
    rng = random.Random(40)
    out: dict[str, list[float]] = {}
    for label, alphabet in RANDOM_ALPHABETS.items():
        chars = ALPHABETS[alphabet]
        row = []
        for length in RANDOM_LENGTHS:
            kept = 0
            for _ in range(per_cell):
                head = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 6)))
                secret = f"{head}_{''.join(rng.choice(chars) for _ in range(length))}"
                kept += not leaked(secret, alone.redact(f"the key is {secret} for now"))
            row.append(100 * kept / per_cell)
        out[label] = row
    return out


# Heads glued to their bodies (no separator), as `token_shapes` reads them: (label, head alphabet, head
# length, body alphabet, body length)
GLUED_SHAPES = (
    ("capitals + base32", "upper", 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    ("capitals + upper base36", "upper", 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 20),
    ("letters + base62", "letters", 4, "alnum", 35),
    ("lower-case + hex", "lower", 4, "hex", 32),
    ("capitals + hex", "upper", 2, "hex", 32),
    ("no head, base62", "letters", 0, "alnum", 32),
    ("no head, lower-case base36", "lower", 0, "abcdefghijklmnopqrstuvwxyz0123456789", 46),
)


def random_glued(alone: Alone, per_shape: int = 500) -> dict[str, float]:
    """label -> recall of glued keys drawn at random in each of GLUED_SHAPES, in a sentence."""
    rng = random.Random(41)
    out: dict[str, float] = {}
    for label, head_kind, head_len, body_kind, body_len in GLUED_SHAPES:
        heads = "".join(c for c in ALPHABETS[head_kind] if c.isalpha())
        body_chars = ALPHABETS.get(body_kind, body_kind)
        kept = 0
        for _ in range(per_shape):
            secret = "".join(rng.choice(heads) for _ in range(head_len)) + "".join(
                rng.choice(body_chars) for _ in range(body_len))
            kept += not leaked(secret, alone.redact(f"the key is {secret} for now"))
        out[label] = 100 * kept / per_shape
    return out


TEXT_SUFFIXES = frozenset((".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".json", ".md", ".rst", ".txt", ".html",
                           ".css", ".toml", ".yaml", ".yml", ".cfg", ".ini", ".c", ".h", ".pxi", ".pyx", ".sh"))


def installed_code(alone: Alone, roots: list[Path], limit: int) -> tuple[int, int, Counter, list[str]]:
    """(bytes, spans, spans per file suffix, examples): the detector alone over the text files of installed
    packages (real code and docs nobody wrote for this benchmark), up to `limit` bytes. Some spans are real
    test keys and certificate bodies; most are what the detector would wrongly redact in a tool result."""
    total = spans = 0
    by_suffix: Counter = Counter()
    shown: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if total >= limit:
                break
            if path.suffix not in TEXT_SUFFIXES or not path.is_file() or path.stat().st_size > 5_000_000:
                continue
            data = path.read_bytes()
            total += len(data)
            for span in alone.spans(data):
                spans += 1
                by_suffix[path.suffix] += 1
                if spans % 20 == 1 and len(shown) < 12:  # every twentieth, to show a spread
                    shown.append(data[span.start : span.end][:80].decode("utf-8", "replace"))
    return total, spans, by_suffix, shown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", action="store_true",
                        help="recall per family of the seen groups only (the sets kept out of sight stay aggregate)")
    parser.add_argument("--show-held-out", action="store_true",
                        help="with --families, the held-out families and rules too: it spends them (what you read, you "
                             "write rules from; score new rules on data nobody has read)")
    parser.add_argument("--backend", choices=("hyperscan", "python"), default=None)
    parser.add_argument("--installed", type=int, default=0, metavar="MB",
                        help="also scan up to MB megabytes of the installed packages' text files (code, docs)")
    args = parser.parse_args(argv)
    backend = args.backend or ("hyperscan" if hyperscan_available() else "python")
    alone = Alone(backend)
    t0 = time.perf_counter()
    groups = score(alone)
    print(f"vendor-token detector alone ({backend}; no vendored or ctxtap rule): "
          f"self-identifying true positives kept off disk, {len(next(iter(groups.values()))) and ''}"
          f"{len(BODY_PLACEMENTS) + 3} placements each")
    for group in ("held-out", "held-out, shaped", "held-out, drawn at random", "seen", "seen, shaped",
                  "seen, drawn at random"):
        fams = groups[group]
        kept = sum(c[0] for c in fams.values())
        cases = sum(c[1] for c in fams.values())
        full = sum(1 for c in fams.values() if c[0] == c[1])
        print(f"  {group:25s} {len(fams):3d} families, {cases:5d} cases: recall {100 * kept / cases:5.1f} %"
              f" ({full} families complete)")
        if args.families and (args.show_held_out or not group.startswith("held-out")):
            for fam, (k, c) in sorted(fams.items()):
                print(f"      {fam:60s} {100 * k / c:5.1f} %  ({k}/{c})")
    third = score_third(alone)
    for label, part in (("third scanner", third),
                        ("  held-out half", {r: c for r, c in third.items() if third_half_held_out(r)}),
                        ("  seen half", {r: c for r, c in third.items() if not third_half_held_out(r)})):
        kept, cases = sum(c[0] for c in part.values()), sum(c[1] for c in part.values())
        print(f"  {label:17s} {len(part):3d} rules,    {cases:5d} cases: recall {100 * kept / cases:5.1f} %"
              f" ({sum(1 for c in part.values() if c[0] == c[1])} rules complete"
              + ("; Kingfisher's examples of vendors gitleaks does not name, 5 neutral placements)"
                 if part is third else ")"))
    if args.families:
        for rule, (k, c) in sorted((r, c) for r, c in third.items() if args.show_held_out or not third_half_held_out(r)):
            print(f"      {rule:60s} {100 * k / c:5.1f} %  ({k}/{c})")
    print(f"  random bodies after a head (recall % at {', '.join(map(str, RANDOM_LENGTHS))} characters):")
    for label, row in random_bodies(alone).items():
        print(f"      {label:15s} " + "  ".join(f"{r:5.1f}" for r in row))
    print("  random glued keys (no separator; recall %): " + ", ".join(
        f"{label} {recall:.1f}" for label, recall in random_glued(alone).items()))
    print("  (shaped: the example's token has the structure the detector is written for, a head of letters,\n"
          "   a separator and 20+ characters; the others are JWTs, webhook URLs, glued heads such as AKIA...)")
    print("\nordinary content altered by the detector alone (lines, raw and as a JSON string):")
    all_altered = all_total = 0
    for name, altered, total, shown in ordinary(alone):
        all_altered += altered
        all_total += total
        print(f"  {name:22s} {altered:5d}/{total:7d}  {100 * altered / total:6.3f} %  {shown[:2] if shown else ''}")
    print(f"  {'all':22s} {all_altered:5d}/{all_total:7d}  {100 * all_altered / all_total:6.3f} %")
    if args.installed:
        roots = sorted({Path(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])})
        size, spans, by_suffix, shown = installed_code(alone, roots, args.installed << 20)
        print(f"\ninstalled packages' text files ({size / 1e6:.0f} MB of code and docs): {spans} spans, "
              f"{spans / (size / 1e6):.2f} per MB; by suffix: {dict(by_suffix.most_common(8))}")
        for text in shown:
            print(f"    {text}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
