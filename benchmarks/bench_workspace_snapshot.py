"""Effect receipt benchmark: what `record`'s workspace snapshots cost on a generated repository.

Generates a repository of N files (default 10,000: source-sized files of 200 B to 8 KiB in nested
directories, a few of 1-4 MiB, a `.git/` with its own objects that the walk leaves out), then times
the snapshot before the run (walk + hashing small files within the budget), a simulated run (10 files
modified, 10 created, 5 deleted, 5 renamed, 100 touched with the same bytes) and the snapshot after
the run with the comparison (walk + hashing changed paths only). Target: under 1 s each on a 2-core
machine; the best of `--repeat` runs is reported (the page cache is warm after the first, as it is
for a repository the agent just read).

Run: .venv/bin/python benchmarks/bench_workspace_snapshot.py [--files 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctxtap.capture.effects import compare  # noqa: E402
from ctxtap.capture.workspace import SnapshotLimits, take  # noqa: E402


def generate(root: Path, n_files: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    files = []
    for i in range(n_files):
        depth = rng.randint(0, 4)
        parts = [f"d{rng.randint(0, 9)}" for _ in range(depth)]
        path = root.joinpath(*parts, f"f{i:05}.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        size = rng.randint(1, 4) << 20 if i % 2000 == 0 else rng.randint(200, 8192)
        path.write_bytes(rng.randbytes(size))
        files.append(path)
    git = root / ".git" / "objects"
    for i in range(2000):
        (git / f"{i % 256:02x}").mkdir(parents=True, exist_ok=True)
        (git / f"{i % 256:02x}" / f"{i:038x}").write_bytes(b"x" * 100)
    return files


def simulate_run(root: Path, files: list[Path], rng: random.Random) -> None:
    picked = rng.sample(files, 130)
    for path in picked[:10]:
        path.write_bytes(path.read_bytes() + b"\n# changed\n")
    for i in range(10):
        (root / f"new{i}.md").write_text(f"created {i}\n")
    for path in picked[10:15]:
        path.unlink()
    for path in picked[15:20]:
        path.rename(path.with_suffix(".moved"))
    now = time.time_ns()
    for path in picked[20:120]:
        os.utime(path, ns=(now, now))  # touched, same bytes
    for path in picked[120:130]:  # written again with the same bytes
        path.write_bytes(path.read_bytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    limits = SnapshotLimits()
    best_before = best_after = float("inf")
    with tempfile.TemporaryDirectory(prefix="ctxtap-bench-ws-") as tmp:
        for r in range(args.repeat):
            root = Path(tmp) / f"repo{r}"
            root.mkdir()
            files = generate(root, args.files)
            t0 = time.perf_counter()
            before = take(root, "workspace", limits)
            t_before = time.perf_counter() - t0
            simulate_run(root, files, random.Random(r))
            t0 = time.perf_counter()
            after = take(root, "workspace", limits, hash_small=False)
            rows, hashed = compare(before, after, limits.hash_budget_bytes)
            t_after = time.perf_counter() - t0
            best_before, best_after = min(best_before, t_before), min(best_after, t_after)
            changes: dict[str, int] = {}
            for row in rows:
                changes[row["change"]] = changes.get(row["change"], 0) + 1
            print(f"run {r + 1}: {len(before.entries)} entries; before {t_before:.3f} s "
                  f"({before.hashed_bytes / 2**20:.1f} MiB hashed); after + compare {t_after:.3f} s "
                  f"({hashed / 2**10:.1f} KiB hashed); changes {dict(sorted(changes.items()))}")
    verdict = "within" if max(best_before, best_after) < 1.0 else "OVER"
    print(f"best: before {best_before:.3f} s, after + compare {best_after:.3f} s ({verdict} the 1 s target)")


if __name__ == "__main__":
    main()
