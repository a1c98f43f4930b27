"""`ctxtap replay CAPTURE -- CMD`: simulated agents recorded through the real proxy, then run again
against the cassette of their own capture (a real `ctxtap replay` process, its proxy and cassette
server), with the divergence report, the pacing and the bad-input messages checked."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from ctxtap.capture.store import Capture
from ctxtap.replay.cassette import load
from ctxtap.replay.server import ReplayServer, pieces
from tests.proxyharness import ROOT, ctxtap_env
from tests.replaycaptures import REPLAY_TIMEOUT
from tests.replaycaptures import record as _record
from tests.replaycaptures import replay as _replay


@pytest.fixture(scope="module")
def claude_capture(tmp_path_factory, ctxtap_config) -> Path:
    return _record(tmp_path_factory.mktemp("replay-claude"), ctxtap_config, "claude", chunk_delay_s=0.02)


@pytest.fixture(scope="module")
def codex_capture(tmp_path_factory, ctxtap_config) -> Path:
    return _record(tmp_path_factory.mktemp("replay-codex"), ctxtap_config, "codex")


def _model_flows(capture: Path) -> list[dict]:
    return [f for f in Capture.open(capture).flows().to_pylist() if f["is_model"]]


# --- the same run again: no divergence beyond volatile fields -----------------------------------


def test_claude_replays_its_own_run_with_only_volatile_differences(claude_capture, tmp_path, ctxtap_config):
    out = tmp_path / "replayed"
    result = _replay(claude_capture, out, ctxtap_config, "--strict")
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "executes the tool calls the recorded model asked for" in err  # said before it starts
    assert err.index("executes the tool calls") < err.index("replay proxy on")
    assert "claude: 3 turns, 8 model calls, 6 tool calls, 1 retries" in result.stdout and result.returncode == 0
    import pyarrow.parquet as pq

    upstreams = [u for u in pq.read_table(out / "flows.parquet", columns=["upstream_url"]).column(0).to_pylist() if u]
    assert upstreams and all("/_replay/<token>/" in u for u in upstreams)  # the run's token is not on disk
    assert "replayed 8 model requests: 8 as recorded, 0 diverged, 0 recorded requests never asked for" in err
    # Claude Code's per-request billing hash and the demo's timestamp are volatile, listed apart
    assert "volatile fields" in err and "hash " in err and "timestamp 20" in err
    assert "DIVERGED" not in err
    # the replayed run is a capture of its own, linked to its source
    replayed = Capture.open(out)
    source = Capture.open(claude_capture)
    link = replayed.manifest.replay
    assert link["source_capture_id"] == source.manifest.capture_id and link["mode"] == "cassette"
    assert len(link["trace_id"]) == 32 and replayed.manifest.capture_id != source.manifest.capture_id
    old, new = _model_flows(claude_capture), _model_flows(out)
    assert [f["status"] for f in new] == [f["status"] for f in old]  # the recorded 429 and its retry included
    # the same transport and shape: each stream in as many network reads, with the same bytes
    for a, b in zip(old, new, strict=True):
        assert b["transport"] == a["transport"] and b["response_bytes"] == a["response_bytes"]
        if a["response_chunk_offsets"]:
            assert len(json.loads(b["response_chunk_offsets"])) == len(json.loads(a["response_chunk_offsets"]))
    assert Capture.open(out).body(new[-1]["response_body_id"]) == source.body(old[-1]["response_body_id"])


def test_replay_paces_streams_as_recorded_and_speed_scales_it(claude_capture, tmp_path, ctxtap_config):
    old = _model_flows(claude_capture)
    recorded = sum(f["ts_response_end"] - f["ts_first_byte"] for f in old if f["streamed"])
    assert recorded > 1.0  # 20 ms between events when recorded
    as_recorded = _replay(claude_capture, tmp_path / "x1", ctxtap_config)
    fast = _replay(claude_capture, tmp_path / "x0", ctxtap_config, "--speed", "0")
    assert as_recorded.returncode == 0 and fast.returncode == 0, as_recorded.stderr + fast.stderr

    def streaming(out: Path) -> float:
        return sum(f["ts_response_end"] - f["ts_first_byte"] for f in _model_flows(out) if f["streamed"])

    paced, unpaced = streaming(tmp_path / "x1"), streaming(tmp_path / "x0")
    assert paced > 0.8 * recorded  # (a loaded machine only makes it slower)
    assert unpaced < 0.5 * paced


def test_codex_over_websocket_keeps_its_response_chain(codex_capture, tmp_path, ctxtap_config):
    out = tmp_path / "replayed"
    result = _replay(codex_capture, out, ctxtap_config, "--strict", agent="codex")
    assert result.returncode == 0, result.stderr
    assert "0 diverged, 0 recorded requests never asked for" in result.stderr
    new = _model_flows(out)
    assert any(f["transport"] == "websocket" for f in new)
    # every continuation the new run sent names a response id the recording served
    recorded_ids = {c.response_id for c in load(codex_capture).calls if c.response_id}
    replayed = load(out)
    continuations = [c.previous_response_id for c in replayed.calls if c.previous_response_id]
    assert continuations and set(continuations) <= recorded_ids
    assert not replayed.problems


def test_a_changed_task_reports_the_first_divergent_block(claude_capture, tmp_path, ctxtap_config):
    result = _replay(claude_capture, tmp_path / "changed", ctxtap_config, "--strict",
                     agent_args=("--prompt-suffix", " Keep it short."))
    assert result.returncode == 3, result.stderr
    diverged = [line for line in result.stderr.splitlines() if line.startswith("  DIVERGED")]
    assert diverged
    # the user's prompt is the first block that differs, named by its path, with the text diff counted
    assert "messages[0].content[" in diverged[0] and "changed" in diverged[0] and "line" in diverged[0]
    assert "--strict: the run diverged" in result.stderr
    without_strict = _replay(claude_capture, tmp_path / "changed2", ctxtap_config,
                             agent_args=("--prompt-suffix", " Keep it short."))
    assert without_strict.returncode == 0


# --- older captures and bad input --------------------------------------------------------------


def _rewrite(path: Path, change) -> None:
    table = pq.read_table(path)
    pq.write_table(change(table), path)


def test_a_capture_without_offsets_replays_evenly_paced_and_says_so(claude_capture, tmp_path, ctxtap_config):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(claude_capture, old, ignore=shutil.ignore_patterns("analysis"))
    _rewrite(old / "flows.parquet", lambda t: t.drop_columns(["response_chunk_offsets"]))
    cassette = load(old)
    assert not cassette.has_offsets
    stream = next(c for c in cassette.calls if c.streamed)
    cuts = pieces(stream)
    assert b"".join(p for _, p in cuts) == stream.body
    assert all(p.endswith(b"\n\n") for _, p in cuts)  # whole events, evenly spread up to the recorded end
    steps = [round(b - a, 6) for (a, _), (b, _) in zip(cuts, cuts[1:], strict=False)]
    assert len(set(steps)) == 1 and cuts[-1][0] == pytest.approx(stream.body_duration_s)
    result = _replay(old, tmp_path / "replayed", ctxtap_config, "--strict")
    assert result.returncode == 0, result.stderr
    assert "predates per-chunk arrival offsets" in result.stderr


def _add_body(capture: Path, data: bytes) -> int:
    table = pq.read_table(capture / "bodies.parquet")
    body_id = max(table.column("body_id").to_pylist()) + 1
    row = pa.table({"body_id": [body_id], "codec": ["zstd"], "base_id": pa.array([None], pa.int64()),
                    "size": [len(data)], "sha256": [""], "data": [zstandard.compress(data)]},
                   schema=table.schema)
    pq.write_table(pa.concat_tables([table, row]), capture / "bodies.parquet")
    return body_id


def _set_flow(capture: Path, index: int, column: str, value) -> None:
    def change(t: pa.Table) -> pa.Table:
        values = t.column(column).to_pylist()
        values[index] = value
        return t.set_column(t.schema.get_field_index(column), t.schema.field(column),
                            pa.array(values, t.schema.field(column).type))
    _rewrite(capture / "flows.parquet", change)


def _model_index(capture: Path, nth: int) -> tuple[int, dict]:
    flows = Capture.open(capture).flows().to_pylist()
    model = [(i, f) for i, f in enumerate(flows) if f["is_model"]]
    return model[nth]


def test_missing_body_and_truncated_stream_are_named_not_hung(claude_capture, tmp_path, ctxtap_config):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(claude_capture, bad, ignore=shutil.ignore_patterns("analysis"))
    i0, first = _model_index(bad, 0)
    _set_flow(bad, i0, "response_body_id", 99_999)  # a body the capture does not hold
    i1, second = _model_index(bad, 1)
    whole = Capture.open(bad).body(second["response_body_id"])
    _set_flow(bad, i1, "response_body_id", _add_body(bad, whole[: whole.index(b"event: message_stop")]))
    cassette = load(bad)
    assert "missing body" in cassette.calls[0].problem and "body 99999" in cassette.calls[0].problem
    assert cassette.calls[1].problem.startswith("truncated stream")
    started = time.monotonic()
    result = _replay(bad, tmp_path / "replayed", ctxtap_config, "--strict")
    assert time.monotonic() - started < REPLAY_TIMEOUT
    assert "cannot play back recorded request 1 (POST api.anthropic.com/v1/messages" in result.stderr
    assert "cannot play back recorded request 2" in result.stderr and "truncated stream" in result.stderr
    # the agent got a provider-style error naming the request, and the run ended (the agent failed)
    assert result.returncode == 1
    assert "matches recorded request 1" in result.stderr and "missing body" in result.stderr


def test_a_websocket_chain_gap_is_named(codex_capture, tmp_path, ctxtap_config):
    import shutil

    bad = tmp_path / "gap"
    shutil.copytree(codex_capture, bad, ignore=shutil.ignore_patterns("analysis"))
    ws = pq.read_table(bad / "ws_messages.parquet").to_pylist()
    requests = [m["idx"] for m in ws if m["is_model_request"]]
    assert len(requests) >= 3
    start, end = requests[1], requests[2]  # drop the second turn: request frame and answers
    kept = [m for m in ws if not (start <= m["idx"] < end)]
    pq.write_table(pa.Table.from_pylist(kept, schema=pq.read_schema(bad / "ws_messages.parquet")),
                   bad / "ws_messages.parquet")
    cassette = load(bad)
    gaps = [c for c in cassette.calls if c.problem and "chain gap" in c.problem]
    assert len(gaps) == 1 and "WebSocket message" in gaps[0].describe()
    result = _replay(bad, tmp_path / "replayed", ctxtap_config, agent="codex")
    assert "WebSocket chain gap" in result.stderr and "cannot play back recorded request" in result.stderr
    assert result.returncode == 1  # the agent stopped on the error frame instead of waiting


def test_the_cassette_server_refuses_requests_without_its_token(claude_capture):
    with ReplayServer(load(claude_capture), speed=0) as server:
        assert server._server.server_address[0] == "127.0.0.1"
        for path in ("/v1/messages", "/_replay/wrong-token/api.anthropic.com/v1/messages"):
            req = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", data=b"{}", method="POST")
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(req, timeout=10)
            assert err.value.code == 403
        assert server.served == []


def test_replay_without_a_command_or_with_a_bad_capture_says_what_to_do(tmp_path, ctxtap_config, claude_capture):
    base = [sys.executable, "-m", "ctxtap.cli.main", "replay"]
    env = ctxtap_env(ctxtap_config)
    no_cmd = subprocess.run([*base, str(claude_capture), "--out", str(tmp_path / "o")], capture_output=True,
                            text=True, env=env, cwd=ROOT, timeout=60)
    assert no_cmd.returncode == 2 and "give the command to replay after --" in no_cmd.stderr
    (tmp_path / "empty").mkdir()
    bad = subprocess.run([*base, str(tmp_path / "empty"), "--", "true"], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=60)
    assert bad.returncode == 1 and "is not a ctxtap capture" in bad.stderr and "Traceback" not in bad.stderr


def test_parallel_tool_results_in_another_order_are_volatile_not_divergence():
    from ctxtap.replay.cassette import Block, Recorded
    from ctxtap.replay.compare import compare_one
    from ctxtap.replay.server import Served

    def block(pos: int, path: str, kind: str, text: str) -> Block:
        return Block(pos, path, kind, "user", text, text, text)

    recorded_blocks = [block(0, "messages[0].content", "message_text", "list files"),
                       block(1, "messages[2].content[0]", "tool_result", "/home/alice"),
                       block(2, "messages[2].content[1]", "tool_result", "README.md")]
    recorded = Recorded(key="f", order=0, flow_id="f", provider="anthropic", api="messages", endpoint="generate",
                        host="api.anthropic.com", path="/v1/messages", method="POST", websocket=False,
                        request_body=b"{}", blocks=recorded_blocks)

    def served(blocks: list[Block]) -> Served:
        return Served(0, "api.anthropic.com", "/v1/messages", False, b"{}", "messages", blocks, recorded, 200)

    swapped = [recorded_blocks[0], block(1, "messages[2].content[0]", "tool_result", "README.md"),
               block(2, "messages[2].content[1]", "tool_result", "/home/alice")]
    result = compare_one(served(swapped))
    assert result.divergence is None
    assert any("a parallel tool result in another order" in v for v in result.volatile)
    # a tool result that changed, or moved to another message, is divergence
    changed = [recorded_blocks[0], recorded_blocks[1], block(2, "messages[2].content[1]", "tool_result", "LICENSE")]
    assert "changed" in compare_one(served(changed)).divergence


def test_every_protocol_says_how_its_stream_ends():
    """A family without its facts never has a cut stream named (`b""` is in every body): Vertex's
    Anthropic stream went unchecked until it was added. Every SSE family names its end."""
    from ctxtap.analysis.protocols import registry
    from ctxtap.wire.families import family

    facts = {p.api: family(p.api) for p in registry.protocols()}
    assert {api for api, f in facts.items() if f is None} == set()
    assert {api for api, f in facts.items() if f.framing == "sse" and not f.stream_end} == set()
