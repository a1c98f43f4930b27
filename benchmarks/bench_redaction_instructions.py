"""Redaction cost in instructions per byte (valgrind's callgrind): repeatable to a tenth of a percent.

This machine's speed drifts by half within minutes, so two timed runs of the same
code can differ by 40 % and an A/B of a 10 % change needs many rounds. Callgrind
counts the instructions executed instead, which depend on the code, the inputs and
the libraries (and a little on hash seeds: 32.54 and 32.56 in two runs). The bodies
are those of `bench_redaction.py` (generated
agent requests plus the shared real-client captures when present); each is scanned
cold (caches cleared before it, after one uncounted warm-up pass over all of them),
and only the measured calls are counted (collection is switched on inside the
`functools.reduce` that drives them). Printed per part, per corpus:

* `engine`: the multi-pattern engine's pass alone (Hyperscan, or the fallback);
* `scan`: `Scanner.find_spans` (the engine pass, every rule's verification, opened
  JSON strings);
* `redact`: `Redactor.redact_bytes` (the scan, placeholders, stream framing).

`--baseline REV` measures `redaction/` as it was at REV side by side. A figure in
MB/s follows from the machine's instructions per second, which this does not
measure: at 3 GHz and about 1.5 instructions per cycle, 15 instructions per byte
is 300 MB/s.

    python benchmarks/bench_redaction_instructions.py [--parts engine,scan] [--corpus real] [--baseline REV]
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("engine", "scan", "redact")


def _write_bodies(path: Path, corpus: str) -> list[int]:
    """The corpus' bodies into one file (length-prefixed), built here, not under valgrind."""
    from benchmarks.bench_redaction import cases, real_bodies

    bodies = [d for _, d in (real_bodies() if corpus == "real" else cases())]
    with path.open("wb") as fh:
        for data in bodies:
            fh.write(struct.pack("<Q", len(data)))
            fh.write(data)
    return [len(d) for d in bodies]


def _read_bodies(path: Path) -> list[bytes]:
    out = []
    with path.open("rb") as fh:
        while head := fh.read(8):
            out.append(fh.read(struct.unpack("<Q", head)[0]))
    return out


def child(part: str, bodies_file: Path) -> None:
    """Run under callgrind: one warm-up pass, then the counted cold pass inside `functools.reduce`."""
    sys.path.insert(0, os.environ.get("CTXTAP_BENCH_REDACTION_ROOT") or str(ROOT))
    from ctxtap.redaction import Redactor
    from ctxtap.redaction.scanner import clear_caches, get_scanner

    scanner = get_scanner()
    fn = {"engine": scanner.engine.scan, "scan": scanner.find_spans,
          "redact": Redactor(b"\x00" * 32, "bench").redact_bytes}[part]
    bodies = _read_bodies(bodies_file)
    for data in bodies:  # compiled lazies (allowlist databases) are built here, uncounted
        fn(data)

    def step(total: int, data: bytes) -> int:
        clear_caches()
        fn(data)
        return total + len(data)

    functools.reduce(step, bodies, 0)


def count(part: str, bodies_file: Path, redaction_root: Path | None) -> int:
    """Instructions of the counted pass (callgrind's `Collected`)."""
    env = dict(os.environ)
    if redaction_root is not None:
        env["CTXTAP_BENCH_REDACTION_ROOT"] = str(redaction_root)
    # compiled Hyperscan databases are cached: compile them at full speed, not under valgrind
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                    "from redaction.scanner import get_scanner; get_scanner().find_spans(b'api_key=' + b'x1' * 20)",
                    str(redaction_root or ROOT)], env=env, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", "--toggle-collect=functools_reduce",
             sys.executable, __file__, "--child", part, "--bodies", str(bodies_file)],
            env=env, capture_output=True, text=True,
        )
    m = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or m is None or int(m.group(1)) == 0:
        raise SystemExit(f"callgrind run of {part} failed (is this Python's functools_reduce symbol visible?):\n"
                         + done.stderr[-2000:])
    return int(m.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="engine,scan", help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--corpus", choices=("all", "real"), default="all",
                        help="all of bench_redaction's bodies, or the real-client captures' only")
    parser.add_argument("--baseline", default="none", help="git revision of redaction/ to measure beside")
    parser.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    parser.add_argument("--bodies", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.bodies)
        return 0
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_redaction import extract_redaction

    if shutil.which("valgrind") is None:
        print("bench_redaction_instructions: needs valgrind (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    parts = [p for p in args.parts.split(",") if p]
    if unknown := set(parts) - set(PARTS):
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory() as tmp:
        bodies_file = Path(tmp) / "bodies.bin"
        sizes = _write_bodies(bodies_file, args.corpus)
        if not sizes:
            print("no bodies (the real-client captures are absent)", file=sys.stderr)
            return 2
        old_root = None if args.baseline == "none" else extract_redaction(args.baseline, Path(tmp) / "old")
        total = sum(sizes)
        print(f"corpus: {args.corpus}, {len(sizes)} bodies, {total / 1e6:.2f} MB, each cold; instructions per byte")
        print(f"{'part':8s} {'now':>8s}" + (f" {'baseline':>9s} {'ratio':>6s}" if old_root else ""))
        for part in parts:
            now = count(part, bodies_file, None) / total
            line = f"{part:8s} {now:8.2f}"
            if old_root is not None:
                was = count(part, bodies_file, old_root) / total
                line += f" {was:9.2f} {now / was:6.3f}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
