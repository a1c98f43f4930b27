"""The analyzer's fast paths for long sessions give exactly what the plain computations give.

A request that resends its predecessor's history takes over the predecessor's
work (prefixes compared in C, scans and runs cut and extended, token sums read
from runs), so it costs time in what it adds. Here: each helper equals its naive
counterpart on random inputs, and the dataset of a long generated session is the
same with the fast paths as without them.
"""

from __future__ import annotations

import json
import random
from array import array
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtap.analysis.blocks.blockscan import BlockKey, BlockScan
from ctxtap.analysis.blocks.blockstore import BlockStore, extend_runs, patch_runs, runs_upto, to_runs
from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.blocks.sequences import align, identical_prefix, shared_bytes, shared_prefix
from ctxtap.analysis.build import build
from ctxtap.analysis.cache.cachecheck import CacheRules
from ctxtap.analysis.cache.prices import PriceTable
from ctxtap.analysis.parsing.memo import ParseMemo
from ctxtap.analysis.parsing.models import Block
from ctxtap.analysis.parsing.parse import parse_exchanges
from ctxtap.analysis.protocols.common import CallNames
from ctxtap.analysis.threads.sessions import Containment, containment
from ctxtap.capture.bodies import common_prefix_len
from ctxtap.capture.store import Capture
from tests.proxyharness import run_ctxtap
from tests.scenarios import Recorded, _entry, write_har

# --- helpers against naive loops ------------------------------------------------------------


def _loop_prefix(a, b) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _loop_align(a, b, max_holes: int) -> tuple[int, list[int]]:
    n, pos, holes = min(len(a), len(b)), 0, []
    while pos < n:
        if a[pos] != b[pos]:
            if len(holes) == max_holes:
                break
            holes.append(pos)
        pos += 1
    return pos, holes


@given(st.lists(st.integers(0, 3), max_size=60), st.lists(st.integers(0, 3), max_size=60))
def test_shared_prefix_is_the_loop_on_lists_and_arrays(a, b):
    assert shared_prefix(a, b) == _loop_prefix(a, b)
    assert shared_prefix(array("q", a), array("q", b)) == _loop_prefix(a, b)
    assert shared_prefix(a, array("q", b)) == _loop_prefix(a, b)  # unlike types compare by value
    assert shared_prefix(a, a + b) == len(a)
    for start in range(len(a) + 2):  # from a position on, without slicing the rest first
        assert shared_prefix(a, b, start) == _loop_prefix(a[start:], b[start:])
        assert shared_prefix(array("q", a), array("q", b), start) == _loop_prefix(a[start:], b[start:])


@given(st.lists(st.integers(0, 2), max_size=40), st.lists(st.integers(0, 2), max_size=40), st.integers(0, 5))
def test_align_is_the_loop_with_holes(a, b, max_holes):
    assert align(a, b, max_holes) == _loop_align(a, b, max_holes)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from(["extend", "edit", "fork", "drop", "repeat"]), st.integers(0, 30),
                          st.lists(st.integers(0, 8), max_size=4)), max_size=14))
def test_containment_carried_along_a_chain_is_the_set_computation(first, steps):
    """Requests that extend, edit in place, fork from an older request, shrink, or are asked
    about twice: the carried counts give exactly the share the sets give."""
    share = Containment()
    history = [array("q", first)]
    for op, at, values in steps:
        prev = history[-1] if op != "fork" else history[at % len(history)]
        cur = array("q", prev)
        if op in ("extend", "fork"):
            cur.extend(values)
        elif op == "edit" and cur:
            for i, v in enumerate(values):
                cur[(at + i * 7) % len(cur)] = v
            cur.extend(values[:1])
        elif op == "drop":
            del cur[at % (len(cur) + 1):]
        assert share(prev, cur) == containment(prev, cur)
        if op == "repeat":
            assert share(prev, cur) == containment(prev, cur)
        history.append(cur)


def test_containment_takes_the_counts_over_instead_of_counting_again(monkeypatch):
    """Claude Code's shape: a per-request hash at position 0, the history extended. After the
    first request no request is counted afresh."""
    import ctxtap.analysis.threads.sessions as sessions
    share, prev = Containment(), array("q", [100, *range(50)])
    share(array("q", [7]), prev)  # the chain's first comparison counts it
    counted = []
    monkeypatch.setattr(sessions, "Counter", lambda blocks=(): counted.append(1) or Counter(blocks))
    for turn in range(20):
        cur = array("q", [101 + turn, *prev[1:], 1000 + turn])
        assert share(prev, cur) == containment(prev, cur) < 1.0
        prev = cur
    assert not counted


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.integers(0, 5), max_size=30), st.integers(0, 30),
       st.integers(0, 5))
def test_cache_divergence_helpers_are_the_slice_computations(a, b, start, key):
    from ctxtap.analysis.cache.cachecheck import _occurs, _same_multiset

    n = min(len(a), len(b))
    start = min(start, n)
    for x, y in ((a, b), (array("q", a), array("q", b))):
        assert _same_multiset(x, y, start, n) == (sorted(a[start:n]) == sorted(b[start:n]))
        assert _occurs(x, key, start) == (key in a[start:])
    edited = a[:start] + [9] + a[start + 1:] + b  # one changed key, then more: the fast way
    assert _same_multiset(a, edited, start, len(a)) == (sorted(a[start:]) == sorted(edited[start:len(a)]))


def test_shared_prefix_of_drafts_is_by_identity():
    drafts = [BlockDraft(f"p{i}", "message_text", "user", None, "same") for i in range(10)]
    twins = [BlockDraft(d.path, d.kind, d.role, d.wire, d.text) for d in drafts]  # equal fields, new objects
    assert shared_prefix(drafts, drafts[:7] + twins[7:]) == 7
    assert shared_prefix(drafts, twins) == 0
    items = [{"a": i} for i in range(5)]
    assert identical_prefix(items, items[:3] + [dict(x) for x in items[3:]]) == 3


@given(st.binary(max_size=300), st.integers(0, 5), st.integers(0, 70_000), st.booleans())
def test_shared_bytes_is_the_common_prefix(seed, extra, where, flip):
    a = (seed or b"x") * (1 + 70_000 // max(1, len(seed)))  # long enough to cross several chunks
    b = bytearray(a)
    if flip and b:
        b[where % len(b)] ^= 0x40
    b = bytes(b) + b"y" * extra
    assert shared_bytes(a, b) == common_prefix_len(a, b) == _loop_prefix(a, b)
    assert shared_bytes(b, a) == common_prefix_len(b, a)


@pytest.mark.parametrize("where", [0, 1, 4095, 4096, 4097, 12_287, 12_288, 65_535, 65_536, 200_000, 299_999])
def test_shared_bytes_at_chunk_edges(where):
    a = bytes(range(256)) * 1200
    b = a[:where] + bytes([a[where] ^ 1]) + a[where + 1:]
    assert shared_bytes(a, b) == where
    assert shared_bytes(a, a) == len(a)
    assert shared_bytes(a, a[:where]) == where


@given(st.lists(st.integers(0, 40), max_size=50), st.integers(0, 50), st.lists(st.integers(0, 40), max_size=20))
def test_runs_cut_and_extended_are_the_runs(ids, k, tail):
    k = min(k, len(ids))
    assert runs_upto(to_runs(ids), k) == to_runs(ids[:k])
    runs = runs_upto(to_runs(ids), k)
    extend_runs(runs, ids[:k] + tail, k)
    assert runs == to_runs(ids[:k] + tail)


@given(st.lists(st.integers(0, 40), min_size=1, max_size=50), st.integers(0, 49), st.integers(0, 60))
def test_runs_patched_at_one_position_are_the_runs(ids, p, occ):
    p = p % len(ids)
    runs = to_runs(ids)
    patch_runs(runs, p, occ)
    assert runs == to_runs(ids[:p] + [occ] + ids[p + 1:])


def _block(position: int, kind: str, role: str, source: str, rule: str) -> Block:
    return Block(position=position, path=f"x[{position}]", kind=kind, role=role, source=source,
                 authority="data", scope="turn", lifetime="turn", content_type="data", rule_id=rule,
                 text="t", bytes=1, content_hash=str(position))


_KEYS = [("message_text", "user", "user_task", "generic.user-text-task"),
         ("message_text", "assistant", "assistant_output", "generic.assistant-text"),
         ("instruction_text", "system", "platform_rules", "claude.system-prompt"),
         ("tool_result", "user", "tool_result", "generic.tool-result"),
         ("message_text", "user", "summary", "claude.compact-summary")]


@given(st.lists(st.integers(0, len(_KEYS) - 1), max_size=40), st.integers(0, 40),
       st.lists(st.integers(0, len(_KEYS) - 1), max_size=10))
def test_block_scan_cut_and_extended_is_the_scan(picks, k, more):
    blocks = [_block(i, *_KEYS[p]) for i, p in enumerate(picks)]
    k = min(k, len(blocks))
    grown = blocks[:k] + [_block(k + i, *_KEYS[p]) for i, p in enumerate(more)]
    scan = BlockScan.of(blocks).upto(k)
    scan.extend(grown, k)
    fresh = BlockScan.of(grown)
    assert {key: list(ps) for key, ps in scan.positions.items()} == {
        key: list(ps) for key, ps in fresh.positions.items()}
    users = [i for i, b in enumerate(grown) if b.kind == "message_text" and b.role == "user"]

    def is_user(key: BlockKey) -> bool:
        return key.kind == "message_text" and key.role == "user"

    assert scan.first(is_user) == (users[0] if users else None)
    assert scan.last(is_user) == (users[-1] if users else None)
    assert scan.first_n(is_user, 2) == users[:2]
    assert scan.all(is_user) == users
    assert scan.any(lambda key: key.source == "summary") == any(b.source == "summary" for b in grown)


@given(st.lists(st.tuples(st.sampled_from(["apply", "set", "get"]),
                          st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("xyz")), max_size=4)),
                max_size=12))
def test_call_names_answer_like_the_dict_they_replace(ops):
    names, plain = CallNames(), {}
    for op, pairs in ops:
        if op == "apply":
            names.apply(list(pairs))
            plain.update(pairs)
        elif op == "set":
            for call_id, name in pairs:
                names[call_id] = name
                plain[call_id] = name
        for call_id in "abcde":
            assert names.get(call_id) == plain.get(call_id)


# --- a long generated session ---------------------------------------------------------------

TOOLS = [{"name": f"tool_{i}", "description": f"Tool {i}. " * 40,
          "input_schema": {"type": "object", "properties": {"arg": {"type": "string"}}}} for i in range(3)]
URL = "https://api.anthropic.com/v1/messages"


def _response(n: int, call_id: str | None, cache_read: int) -> dict:
    content: list[dict] = [{"type": "text", "text": f"step {n}"}]
    if call_id:
        content.append({"type": "tool_use", "id": call_id, "name": "tool_1", "input": {"arg": f"a{n}"}})
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": "tool_use" if call_id else "end_turn",
            "usage": {"input_tokens": 50, "cache_read_input_tokens": cache_read,
                      "cache_creation_input_tokens": 100, "output_tokens": 20}}


class _Agent:
    """A Claude-Code-like loop: history resent in full, breakpoint on the newest message."""

    def __init__(self, name: str, header: bool, rnd: random.Random) -> None:
        self.name, self.header, self.rnd = name, header, rnd
        self.messages: list[dict] = [{"role": "user", "content": f"Task for {name}: fix the build."}]
        self.pending: dict | None = None  # a tool call whose result goes into a later request
        self.n = 0

    def body(self, turn: int) -> dict:
        rules = "You are Claude Code, a careful agent.\n" + "Follow the conventions. " * 30
        if turn >= 8:
            rules += f"\nCurrent time: 2026-11-29T10:{turn // 8:02d}:00Z"  # changes every 8 turns
        system = [{"type": "text", "text": f"x-anthropic-billing-header: cc_version=9.9.9; cch={self.rnd.getrandbits(20):05x};"},
                  {"type": "text", "text": rules, "cache_control": {"type": "ephemeral"}}]
        messages = json.loads(json.dumps(self.messages))
        if turn % 2 == 0:  # the breakpoint moves to the newest message on every other turn
            last = messages[-1]
            if isinstance(last["content"], str):
                last["content"] = [{"type": "text", "text": last["content"]}]
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        # Claude Code's key order: the history first, so a changed billing hash leaves it a shared prefix
        return {"model": "claude-sonnet-4-5", "messages": messages, "system": system, "tools": TOOLS,
                "max_tokens": 8000}

    def advance(self, turn: int, response: dict) -> None:
        calls = [c for c in response["content"] if c["type"] == "tool_use"]
        self.messages.append({"role": "assistant", "content": response["content"]})
        if calls and turn % 5 == 3:
            self.pending = calls[0]  # the result comes one request later, its call already resent
            return
        for call in calls:
            self.messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call["id"], "content": "output line\n" * self.rnd.randint(1, 30),
                 "is_error": self.rnd.random() < 0.1}]})

    def before(self, turn: int) -> None:
        if self.pending is not None:
            self.messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": self.pending["id"], "content": "late result"}]})
            self.pending = None
        if turn == 14 and len(self.messages) > 6:  # an edit in the middle of the history
            self.messages[4] = {"role": "user", "content": "edited earlier message"}
        if turn == 20:
            self.messages.append({"role": "user", "content": "Now also update the docs."})  # a new task


def long_session(turns: int = 36) -> Recorded:
    rnd = random.Random(5)
    agents = [_Agent("a", True, rnd), _Agent("b", False, rnd)]
    entries, ts, n = [], 1_800_000_000.0, 0
    for turn in range(turns):
        for agent in agents:
            agent.before(turn)
            if agent.name == "a" and turn == 24:  # compaction: a summary replaces the history
                prompt = agent.body(turn)
                prompt["messages"].append({"role": "user", "content": "Your task is to create a detailed summary "
                                           "of the conversation so far."})
                entries.append(_entry(URL, _headers(agent), json.dumps(prompt).encode(), 200, _json,
                                      json.dumps(_response(n, None, 0)).encode(), ts, 0.5))
                n, ts = n + 1, ts + 1
                agent.messages = [{"role": "user", "content": "This session is being continued from a previous "
                                   "conversation that ran out of context. Summary: the build is fixed."}]
            body = agent.body(turn)
            status = 429 if (agent.name == "b" and turn == 17) else 200
            call_id = f"toolu_{agent.name}_{turn}"
            response = _response(n, call_id, 900 * turn)
            entries.append(_entry(URL, _headers(agent), json.dumps(body).encode(), status, _json,
                                  json.dumps(response if status == 200 else {"type": "error", "error": {
                                      "type": "rate_limit_error", "message": "slow down"}}).encode(), ts, 0.5))
            n, ts = n + 1, ts + 1
            if status == 200:
                agent.advance(turn, response)
            if agent.name == "a" and turn % 12 == 5:  # a title side request
                side = {"model": "claude-haiku-4-5", "max_tokens": 100, "system": [
                    {"type": "text", "text": "Generate a concise title for this conversation."}],
                    "messages": [{"role": "user", "content": "fix the build"}]}
                entries.append(_entry(URL, _headers(agent), json.dumps(side).encode(), 200, _json,
                                      json.dumps(_response(n, None, 0)).encode(), ts, 0.2))
                n, ts = n + 1, ts + 1
    return Recorded(entries=entries)


_json = [("content-type", "application/json")]


def _headers(agent: _Agent) -> list[tuple[str, str]]:
    headers = [("content-type", "application/json"), ("user-agent", "claude-cli/9.9.9 (external, cli)")]
    if agent.header:
        headers.append(("x-claude-code-session-id", f"session-{agent.name}"))
    return headers


@pytest.fixture(scope="module")
def long_capture(tmp_path_factory, ctxtap_config) -> Path:
    tmp = tmp_path_factory.mktemp("long")
    har = write_har(long_session(), tmp / "long.har")
    run_ctxtap(["import", str(har), "--out", str(tmp / "cap")], ctxtap_config)
    return tmp / "cap"


def test_long_session_dataset_is_the_same_without_the_fast_paths(long_capture):
    capture, prices, rules = Capture.open(long_capture), PriceTable.load(None), CacheRules.load(None)
    fast, stats = build(capture, prices, rules)
    plain, _ = build(Capture.open(long_capture), prices, rules, reuse=False)
    assert stats.requests > 70 and stats.body_bytes_scanned < stats.body_bytes_seen / 2  # the fast paths ran
    assert fast.keys() == plain.keys()
    for table in fast:
        assert fast[table] == plain[table], table
    kinds = Counter(p["divergence_kind"] for p in fast["prefix"])
    assert kinds["extended"] and kinds["changed"] and len(kinds) >= 3  # the session exercises divergences
    assert {r["purpose"] for r in fast["requests"]} >= {"main", "title", "compaction"}


def test_long_session_sums_and_prefixes_match_block_by_block(long_capture):
    """Token estimates, shared prefixes and cache keys the dataset reports, recomputed per block."""
    capture = Capture.open(long_capture)
    tables, _ = build(capture, PriceTable.load(None), CacheRules.load(None))
    calls = {c.call_key: c for c in parse_exchanges(Capture.open(long_capture).exchanges(), ParseMemo())}
    tokens = {row["content_hash"]: row["tokens_estimated"] for row in tables["block_content"]}
    hashes = {key: [b.content_hash for b in call.request.blocks] for key, call in calls.items()}
    prefix = {p["request_id"]: p for p in tables["prefix"]}
    for row in tables["requests"]:
        mine = hashes[row["request_id"]]
        assert row["input_tokens_estimated"] == sum(tokens[h] for h in mine)
        p = prefix[row["request_id"]]
        if p["previous_request_id"] is not None:
            common = _loop_prefix(hashes[p["previous_request_id"]], mine)
            assert p["common_prefix_blocks"] == common
            assert p["common_prefix_tokens"] == sum(tokens[h] for h in mine[:common])


def test_store_helpers_match_block_by_block(long_capture):
    """Runs, scans, token prefixes and columns the store derives, against plain loops."""
    store = BlockStore()
    seen = []
    for call in parse_exchanges(Capture.open(long_capture).exchanges(), ParseMemo()):
        rb = store.add_request(call.call_key, call.request.blocks)
        fresh = BlockScan.of(call.request.blocks)
        assert {k: list(v) for k, v in store.scan.positions.items()} == {
            k: list(v) for k, v in fresh.positions.items()}
        assert rb.runs == to_runs(list(rb.occurrences))
        seen.append((rb, list(call.request.blocks)))
    store.tokenise()
    content_tokens = store.content_tokens()
    for rb, blocks in seen:
        per_block = [content_tokens[c] for c in rb.content_ids]
        prefix = store.token_prefix(rb)
        assert prefix.total == sum(per_block)
        for p in range(0, len(per_block) + 2, 7):
            assert prefix.upto(p) == sum(per_block[:p])
        assert list(store.column(rb, "path")) == [b.path for b in blocks]


def test_runs_per_request_stay_few_when_a_block_changes_in_place(long_capture):
    """Claude Code's shape (history first, a billing hash changing in system[0] on every request):
    the changed blocks are numbered apart, so a request's history stays a few runs instead of
    one run per earlier request, and occurrence ids stay dense."""
    tables, _ = build(Capture.open(long_capture), PriceTable.load(None), CacheRules.load(None))
    ids = sorted(o["occurrence_id"] for o in tables["block_occurrences"])
    assert ids == list(range(len(ids)))
    runs = Counter(r["request_id"] for r in tables["request_block_runs"])
    main = [r for r in tables["requests"] if r["purpose"] == "main" and r["n_blocks"] > 40]
    assert main, "the session grows past 40 blocks"
    assert max(runs[r["request_id"]] for r in main) <= 12, sorted(runs[r["request_id"]] for r in main)
    assert max(r["n_blocks"] for r in main) >= 80
