"""`ctxtap analyze`: derive the analysis dataset of a capture, once, and reuse it.

The dataset is rebuilt only when the capture, the ctxtap version, the analysis
version, the price table or the cache rules change (a fingerprint in
`analysis/_meta.json`). Blocks are content-addressed (see `analysis.blockstore`),
so tokenising and storage follow the unique content.
"""

from __future__ import annotations

import gc
import json
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ctxtap import __version__
from ctxtap.analysis.blocks.blockscan import BlockKey
from ctxtap.analysis.blocks.blockstore import BlockStore
from ctxtap.analysis.cache.cachecheck import DEFAULT_RULES, CacheRules
from ctxtap.analysis.cache.prices import PriceTable
from ctxtap.analysis.db import dataset_dir
from ctxtap.analysis.parsing import tokens
from ctxtap.analysis.parsing.memo import ParseMemo
from ctxtap.analysis.parsing.parse import parse_exchanges
from ctxtap.analysis.rules.attribution import CACHE_TRANSPARENT_RULES  # blocks providers drop before caching
from ctxtap.analysis.tables import TABLES, BuildContext, CallRec
from ctxtap.analysis.threads import constancy, runfacts
from ctxtap.analysis.threads.sessions import SessionAssigner, TurnFacts
from ctxtap.capture.private import tighten
from ctxtap.capture.store import Capture

ANALYSIS_VERSION = "1"
META = "_meta.json"


@dataclass
class AnalyzeOptions:
    prices: Path | None = None
    cache_rules: Path | None = None
    force: bool = False
    # other runs of the same client to read constancy across (`analyze --across-runs`); None keeps
    # the ones the dataset was last built with
    peers: tuple[Path, ...] | None = None


@dataclass
class BuildStats:
    requests: int = 0
    blocks_total: int = 0
    distinct_contents: int = 0
    bytes_tokenised: int = 0
    unique_block_bytes: int = 0
    context_bytes_total: int = 0
    body_bytes_seen: int = 0  # request bodies the parser was given
    body_bytes_scanned: int = 0  # of which actually parsed (the rest reused from the previous body)
    seconds: float = 0.0
    across_runs: int = 0  # sessions (here and in named peers) the segment reader compared; 0: none
    openings: list[constancy.Opening] = field(default_factory=list)  # each session's opening (analysis.threads.constancy)


def fingerprint(capture: Capture, prices: PriceTable, rules_path: Path | None) -> dict:
    files = {}
    for name in ("flows.parquet", "ws_messages.parquet", "bodies.parquet", "telemetry.parquet",
                 "telemetry_records.parquet", "effects.parquet", "effect_roots.parquet", "gates.json"):
        path = capture.directory / name
        if path.exists():
            st = path.stat()
            files[name] = [st.st_size, st.st_mtime_ns]
    rules = Path(rules_path).read_text() if rules_path else ""
    return {
        "code": _code_digest(),
        "ctxtap_version": __version__, "analysis_version": ANALYSIS_VERSION,
        "capture_id": capture.manifest.capture_id, "capture_status": capture.manifest.status,
        "files": files, "prices": prices.digest, "cache_rules": rules,
        "cache_rules_default": DEFAULT_RULES.read_text(),
    }


Progress = Callable[[Iterable, int], Iterable]
Phase = Callable[[str], None]


def _code_digest() -> str:
    """Digest of the analyzer's own code and SQL, so an upgrade always rebuilds."""
    import hashlib

    digest = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.sql"), *root.rglob("*.toml")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_analysis(capture_dir: Path, options: AnalyzeOptions | None = None,
                    progress: Progress | None = None, phase: Phase | None = None) -> tuple[Path, bool]:
    """Build the dataset if missing or stale. Returns (dataset dir, whether it was built now).
    `progress` counts the parsed requests, `phase` names each later step (a command shows both)."""
    options = options or AnalyzeOptions()
    capture = Capture.open(capture_dir)
    prices = PriceTable.load(options.prices)
    rules = CacheRules.load(options.cache_rules)
    out = dataset_dir(capture.directory)
    meta_path = out / META
    old = _meta(meta_path)
    peers = _peers(capture.directory, options, old)
    peer_openings = {str(p): _openings_of(p, options) for p in peers}
    key = fingerprint(capture, prices, options.cache_rules)
    if peers:
        key["peers"] = {p: constancy.digest_of(o) for p, o in sorted(peer_openings.items())}
    if not options.force and not capture.live and old.get("fingerprint") == key:
        return out, False
    start = time.perf_counter()
    # The build allocates many long-lived objects (blocks, memo entries); the cyclic GC would
    # rescan them again and again, making time grow faster than the content. Nothing here
    # creates reference cycles that need collecting before the build ends.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        tables, stats = build(capture, prices, rules, progress, phase=phase,
                              peers=[o for found in peer_openings.values() for o in found])
    finally:
        if gc_was_enabled:
            gc.enable()
    stats.seconds = time.perf_counter() - start
    if phase is not None:
        phase("writing the dataset")
    write_dataset(out, capture.manifest.capture_id, tables, {
        "fingerprint": key, "built_at": time.time(), "prices_as_of": prices.as_of,
        "cache_rules_as_of": rules.as_of, "estimate_encoding": tokens.encoding_label(),
        "stats": {k: v for k, v in stats.__dict__.items() if k != "openings"},
        "openings": [o.model_dump() for o in stats.openings], "peers": [str(p) for p in peers],
    })
    return out, True


def _meta(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _peers(directory: Path, options: AnalyzeOptions, old: dict) -> tuple[Path, ...]:
    """The other runs this capture is read across: the options', else those it was built with last
    (a peer that has gone is left out)."""
    named = options.peers if options.peers is not None else tuple(Path(p) for p in old.get("peers", []))
    here = directory.resolve()
    return tuple(p for p in dict.fromkeys(Path(p).resolve() for p in named) if p != here and p.is_dir())


def _openings_of(peer: Path, options: AnalyzeOptions) -> list[constancy.Opening]:
    """A peer's session openings, from its dataset (analysed on its own first when it has none)."""
    meta = _meta(dataset_dir(peer) / META)
    if "openings" not in meta:
        ensure_analysis(peer, AnalyzeOptions(options.prices, options.cache_rules, peers=None))
        meta = _meta(dataset_dir(peer) / META)
    out = []
    for row in meta.get("openings", []):
        try:
            out.append(constancy.Opening.model_validate(row))
        except ValueError:
            continue  # a dataset from an older ctxtap: rebuilt when it is next analysed
    return out


def write_dataset(out: Path, capture_id: str, tables: dict[str, list[dict]], meta: dict,
                  compression: str = "zstd") -> None:
    """Write every table to `<out>/<table>/capture_id=<id>/part-0.parquet`, atomically as a whole.
    (A live view's private, short-lived versions are written uncompressed: a third faster.)"""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for table in TABLES:
        name, schema, rows = table.name, table.schema, tables.get(table.name, [])
        part = tmp / name / f"capture_id={capture_id}"
        part.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), part / "part-0.parquet", compression=compression)
    (tmp / META).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    tighten(out)  # pyarrow wrote with the umask; the dataset holds the capture's texts


# --- the build ------------------------------------------------------------------------------


def _is_summary(key: BlockKey) -> bool:
    return key.source == "summary"


def _is_user_task(key: BlockKey) -> bool:
    return key.source == "user_task"


def _outside_cache_key(key: BlockKey) -> bool:
    return key.rule_id in CACHE_TRANSPARENT_RULES


def add_call(store: BlockStore, assigner: SessionAssigner, call) -> CallRec:
    """One parsed call into the block store and its session (the full build and the live view)."""
    rb = store.add_request(call.call_key, call.request.blocks)
    # the store's scan of the request says where its summary, tasks and billing lines are
    scan, blocks = store.scan, call.request.blocks
    compacted = scan.any(_is_summary)
    tasks = {blocks[p].content_hash for p in scan.all(_is_user_task)}
    placement = assigner.place(call, rb.conversation, continues_after_compaction=compacted, tasks=tasks,
                               turn=TurnFacts.from_scan(scan, blocks))
    return CallRec(call, placement, rb, rb.content_ids, call.call_key, scan.all(_outside_cache_key))


def _read(capture: Capture, progress: Progress | None, reuse: bool,
          states: constancy.States) -> tuple[BlockStore, list[CallRec], BuildStats]:
    """One pass over the capture's model calls into a block store and sessions; each session's
    opening (its first main request's line fingerprints) is kept for the reading across runs."""
    store = BlockStore(reuse_prefix=reuse)
    assigner = SessionAssigner()
    recs: list[CallRec] = []
    stats = BuildStats()
    exchanges: Iterable = capture.exchanges(views=True)
    if progress is not None:
        flows = capture.flows()
        total = sum(1 for m, r in zip(flows.column("is_model").to_pylist(), flows.column("record_mode").to_pylist(),
                                      strict=True) if m and r == "full")
        exchanges = progress(exchanges, total)
    memo = ParseMemo()
    opened: set[str] = set()
    with runfacts.using(capture.manifest.environment, capture.manifest.command), constancy.using(states):
        for call in parse_exchanges(exchanges, memo if reuse else None):
            rec = add_call(store, assigner, call)
            stats.blocks_total += len(call.request.blocks)
            stats.context_bytes_total += rec.blocks.context_bytes
            if rec.placement.thread_kind == "main" and rec.placement.session_id not in opened:
                opened.add(rec.placement.session_id)
                stats.openings.append(constancy.opening_of(call.identity.client, call.identity.client_version,
                                                           call.request.blocks))
            call.request.blocks = []  # the store holds what is needed, once
            recs.append(rec)
    stats.body_bytes_scanned, stats.body_bytes_seen = memo.bytes_scanned, memo.bytes_seen
    return store, recs, stats


def build(capture: Capture, prices: PriceTable, rules: CacheRules,
          progress: Progress | None = None, reuse: bool = True,
          phase: Phase | None = None, peers: list[constancy.Opening] | None = None
          ) -> tuple[dict[str, list[dict]], BuildStats]:
    """The tables of a capture. `reuse=False` parses every request from scratch and lets the
    block store take over nothing from the previous request: the reference the fast paths
    (which make a long session cost what it adds) must match exactly.

    Where sessions of one client version (here, or in `peers`, other runs' openings) differ, the
    capture is read a second time with their constancy in force (analysis.threads.constancy)."""
    store, recs, stats = _read(capture, progress, reuse, constancy.States())
    states = constancy.states_of(stats.openings + list(peers or []))
    if states:
        if phase is not None:
            phase("reading again across runs")
        openings = stats.openings
        del store, recs  # the first reading is not needed any more: never two in memory
        store, recs, stats = _read(capture, None, reuse, states)
        stats.openings = openings
        stats.across_runs = len(openings) + len(peers or [])
    if phase is not None:
        phase(f"counting tokens of {len(store.content):,} distinct blocks")
    store.tokenise()
    stats.requests = len(recs)
    stats.distinct_contents = len(store.content)
    stats.bytes_tokenised = store.bytes_tokenised
    stats.unique_block_bytes = sum(row["bytes"] for row in store.content.values())

    from ctxtap.capture.paths import redaction_key
    from ctxtap.redaction import Redactor

    redactor = Redactor(redaction_key(), capture.manifest.capture_id)
    ctx = BuildContext(capture=capture, recs=recs, store=store, content_tokens=store.content_tokens(),
                       prices=prices, rules=rules, redact_text=redactor.redact_text)
    for table in TABLES:
        if phase is not None:
            phase(f"building {table.name}")
        ctx.tables[table.name] = table.build(ctx)
    return ctx.tables, stats
