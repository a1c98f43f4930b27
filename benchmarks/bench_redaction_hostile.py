"""Redaction of bodies built to be slow: every shape linear, both engines, side by side in one run.

A tool result is whatever a file or a command printed, so an agent's request can
carry text nobody would write by hand: a keyword every four bytes, a line of a
thousand `curl` commands, a wall of JWTs. Each such shape is redacted (the writer's
`Redactor.redact_bytes`, caches cleared) at two sizes, four times apart, with the
Hyperscan engine and with the pure-Python fallback. Printed per shape and engine:
MB/s at the larger size and how much longer the larger took (about 4 is linear;
16 would be quadratic, which is what this benchmark exists to catch: 35 s for a
megabyte of `key=`, 39 s for 230 KB of `curl -u` under the fallback, before they
were fixed). A flag marks growth above `--max-growth`; `--check` exits 1 then.
`--memory` adds the peak of Python allocations while redacting the larger body, per
megabyte of body (tracemalloc; a megabyte of `key=` held 180 MB before its hits were
kept as arrays).

    python benchmarks/bench_redaction_hostile.py [--size 65536] [--no-fallback] [--memory] [--check]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxtap.redaction import Redactor  # noqa: E402
from ctxtap.redaction.engine import hyperscan_available  # noqa: E402
from ctxtap.redaction.scanner import clear_caches  # noqa: E402

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_B64 = _ALNUM + "+/"


def _rnd(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _sse(events: list[dict]) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events)


def _shapes() -> dict[str, Callable[[random.Random, int], str]]:
    """Name -> text of about `size` bytes."""
    r = _rnd
    return {
        "keyword every 4 bytes (key=key=...)": lambda g, s: "key=" * (s // 4),
        "keyword soup, no value": lambda g, s: "key token secret auth password " * (s // 32),
        "names and long random values": lambda g, s: "".join(f'"api_key_{i}": "{r(g, 140)}", ' for i in range(s // 160)),
        "long names before token =": lambda g, s: "".join(f'{r(g, 48)}_token = "{r(g, 20)}"\n' for _ in range(s // 80)),
        "JWT after JWT": lambda g, s: "".join(f"eyJ{r(g, 30)}.eyJ{r(g, 30)}. " for _ in range(s // 70)),
        "AWS key ids": lambda g, s: "".join("AKIA" + r(g, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") + " " for _ in range(s // 21)),
        "one line of curl -u": lambda g, s: "".join(f"curl -u user:{r(g, 12)} https://x " for _ in range(s // 40)),
        "one line of curl -H, no auth": lambda g, s: "".join(f'curl -H "Accept: {r(g, 8)}" https://x ' for _ in range(s // 40)),
        "private key headers": lambda g, s: "-----BEGIN RSA PRIVATE KEY-----\n" * (s // 32),
        "passwords in escaped quotes": lambda g, s: json.dumps({"x": f'password=\\"{r(g, 10)}\\" ' * (s // 30)}),
        "escaped slashes": lambda g, s: json.dumps({"x": "https://a/b/c " * (s // 14)}).replace("/", "\\/"),
        "CSV rows under a password header": lambda g, s: "".join(f"password,{r(g, 12)}\n" for _ in range(s // 22)),
        "Markdown rows, user and password": lambda g, s: "| user | password |\n" + "".join(
            f"| {r(g, 6)} | {r(g, 12)} |\n" for _ in range(s // 26)),
        "Markdown header after header": lambda g, s: "| user | password |\n" * (s // 20),
        "authorities without a scheme": lambda g, s: "".join(f"a:{r(g, 6)}@10.0.0.{g.randint(1, 254)} "
                                                             for _ in range(s // 18)),
        "credentials: user/password pairs": lambda g, s: "".join(f"credentials: {r(g, 5)}/{r(g, 12)}!1 "
                                                                 for _ in range(s // 34)),
        "one URL, a random segment after another": lambda g, s: "https://h.example/" + "/".join(
            r(g, 24) for _ in range(s // 25)),
        "URL after URL, a random segment each": lambda g, s: "".join(f"https://h.example/{r(g, 22)} "
                                                                     for _ in range(s // 41)),
        "numbers, colons, random bodies": lambda g, s: "".join(f"{g.randint(10**5, 10**9)}:{r(g, 32)} "
                                                               for _ in range(s // 42)),
        "base64url pieces, one long run": lambda g, s: "aB3-" * (s // 4),
        "base64url pieces, run after run": lambda g, s: "".join(f"k_{r(g, 8)}-{r(g, 8)}_{r(g, 8)} " for _ in range(s // 30)),
        "standard base64 after a head, + early": lambda g, s: "".join(
            f"k_{r(g, 5)}+{r(g, 30, _ALNUM + '+/')} " for _ in range(s // 40)),
        "integrity hashes (sha512-…+…)": lambda g, s: "".join(
            f'"integrity": "sha512-{r(g, 6)}+{r(g, 80, _ALNUM + "+/")}==",\n' for _ in range(s // 110)),
        "positional passwords, one line": lambda g, s: "".join(
            f"htpasswd -b f u {r(g, 10)} net use \\\\s\\x {r(g, 8)} " for _ in range(s // 50)),
        "a hook's names down one URL's path": lambda g, s: "https://qzv.example/" + "".join(
            f"webhooks/{r(g, 16)}/" for _ in range(s // 26)),
        "PHP's JSON: a URL in every string, its slashes escaped": lambda g, s: json.dumps(
            [{"href": f"https://qzv.example/{r(g, 8)}/{i}"} for i in range(s // 40)]).replace("/", "\\/"),
        "a web page's quotes, one line of references": lambda g, s: "<pre>" + "".join(
            f"&quot;k{r(g, 4)}&quot;: &#39;{r(g, 6)}&#39;, " for _ in range(s // 36)) + "</pre>",
        "dollar-joined fields, no hash ($a$b$…)": lambda g, s: "".join(f"${r(g, 2).lower()}" for _ in range(s // 3)),
        "password hashes, one after another": lambda g, s: "".join(
            f"$argon2id$v=19$m=65536,t=3,p=4${r(g, 22)}${r(g, 43)}:pbkdf2_sha256$600000${r(g, 12)}${r(g, 44)} "
            for _ in range(s // 160)),
        "a seed phrase's name before every run of words": lambda g, s: "".join(
            "mnemonic: " + " ".join(r(g, 5).lower() for _ in range(25)) + "\n" for _ in range(s // 160)),
        "credential maps opened, never closed": lambda g, s: '"bearer": {' * (s // 12),
        "composer config after composer config": lambda g, s: "".join(
            f"composer config -g github-oauth.{r(g, 6)}.com " for _ in range(s // 40)),
        "kind: Secret documents, one after another": lambda g, s: "".join(
            f"---\nkind: Secret\nstringData:\n  k{r(g, 4)}: {r(g, 12)}\n" for _ in range(s // 48)),
        "kind: Secret lines, no document break": lambda g, s: "kind: Secret\ndata:\n" * (s // 19),
        '"kind": "Secret" in JSON never closed': lambda g, s: '{"kind": "Secret", "data": {' * (s // 29),
        "gh secret set after gh secret set": lambda g, s: "gh secret set X " * (s // 16),
        "ssm --type SecureString after another": lambda g, s: "aws ssm put-parameter " + "--type SecureString " * (s // 20),
        "secrets set, pair after pair on one line": lambda g, s: "supabase secrets set " + "".join(
            f"K{r(g, 4)}={r(g, 12)} " for _ in range(s // 19)),
        "a literal piped into secret setter after setter": lambda g, s: "".join(
            f"echo {r(g, 10)} | wrangler secret put K " for _ in range(s // 40)),
        "a secret's file given stdin after another": lambda g, s: "echo pw | tool " + "--key-file - " * (s // 13),
        "process substitutions into secret files": lambda g, s: "tool " + "".join(
            f"--password-file <(echo {r(g, 10)}) " for _ in range(s // 35)),
        "an unclosed process substitution after another": lambda g, s: "--token <(echo x " * (s // 17),
        "net user and lftp -u, command after command": lambda g, s: "".join(
            f"net user u{r(g, 4)} {r(g, 10)} /add; lftp -u a,{r(g, 8)} h; " for _ in range(s // 50)),
        "a JSON string of commands": lambda g, s: json.dumps({"command": "; ".join(
            f"rabbitmqctl add_user u{i} {r(g, 10)}" for i in range(s // 40))}),
        "key-width base64 lines, two by two": lambda g, s: "".join(
            f"{r(g, 64, _B64)}\n{r(g, 64, _B64)}\nnext\n" for _ in range(s // 135)),
        "key-width base64 lines, one block, low entropy": lambda g, s: ("A" * 64 + "\n") * (s // 65),
        "SSE, one stream per event": lambda g, s: _sse(
            [{"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": "x"}}
             for i in range(s // 100)]),
        "SSE, two-character tool deltas": lambda g, s: _sse(
            [{"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": r(g, 2)}}
             for _ in range(s // 110)]),
    }


def _seconds(redactor: Redactor, data: bytes, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        clear_caches()
        t0 = time.process_time()
        redactor.redact_bytes(data)
        best = min(best, time.process_time() - t0)
    return max(best, 1e-6)


def _peak_mb_per_mb(redactor: Redactor, data: bytes) -> float:
    clear_caches()
    tracemalloc.start()
    try:
        redactor.redact_bytes(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / len(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=65536, help="the smaller size in bytes (the larger is 4x)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-fallback", action="store_true", help="skip the pure-Python engine")
    parser.add_argument("--max-growth", type=float, default=8.0, help="flag a shape whose 4x size took longer than this")
    parser.add_argument("--check", action="store_true", help="exit 1 if a shape is flagged")
    parser.add_argument("--memory", action="store_true", help="also the peak allocations per MB of body (Hyperscan)")
    args = parser.parse_args()

    engines = (["hyperscan"] if hyperscan_available() else []) + ([] if args.no_fallback else ["python"])
    redactors = {name: Redactor(b"k" * 32, "bench", backend=name) for name in engines}
    for redactor in redactors.values():
        redactor.redact_bytes(b'warm "api_key": "x"')  # rules compiled outside the timing
    print(f"size {args.size // 1024} KB and {4 * args.size // 1024} KB; MB/s at the larger (CPU time, one core); "
          "growth = time(4x) / time(1x), about 4 when linear")
    print(f"{'shape':38s}" + "".join(f"{e + ' MB/s':>16s}{'growth':>8s}" for e in engines)
          + (f"{'MB/MB':>8s}" if args.memory else ""))
    flagged = []
    for name, build in _shapes().items():
        small = build(random.Random(1), args.size).encode()
        large = build(random.Random(1), 4 * args.size).encode()
        row = f"{name:38s}"
        for engine, redactor in redactors.items():
            t_small, t_large = _seconds(redactor, small, args.repeat), _seconds(redactor, large, args.repeat)
            growth = t_large / t_small
            mark = "!" if growth > args.max_growth else " "
            if mark == "!":
                flagged.append(f"{name} ({engine})")
            row += f"{len(large) / t_large / 1e6:16.2f}{growth:7.1f}{mark}"
        if args.memory:
            row += f"{_peak_mb_per_mb(next(iter(redactors.values())), large):8.1f}"
        print(row, flush=True)
    if flagged:
        print("growing faster than linear: " + ", ".join(flagged))
    print("(2 cores, shared: figures are CPU-bound per core; small sizes make growth noisy)")
    return 1 if flagged and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
