"""`ctxtap publish` on the real-client corpus (../shared/real-clients; skipped when absent).

The flows were recorded as user `alice` ("Alice Liddell", alice.liddell@example.com) on host
`alice-laptop` with HOME=/home/alice and a GitHub remote: none of that may appear in any
published file, and each attachment must list every request's blocks in the captured order.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ctxtap.analysis.db import connect
from ctxtap.reports.publish.build import full_blocks
from tests.proxyharness import run_ctxtap

RUNS = ("basic/claude", "basic/codex", "basic/codex-sse", "basic/grok", "basic/kimi-code",
        "long/claude", "long/codex-sse", "long/kimi-code")
# Case-insensitive: `Alice`, `ALICE` and `alice` are all the user.
FORBIDDEN = ("alice", "liddell", "alice-laptop", "/home/alice", "alice.liddell@example.com", "Alice Liddell",
             "7946 0321")


@pytest.fixture(scope="module")
def published(ctxtap_config, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Each run imported with `ctxtap import` and published with `ctxtap publish`."""
    from tests.conftest import REAL_CLIENTS

    if not (REAL_CLIENTS / "README.md").exists():
        pytest.skip("real-client corpus ../shared/real-clients is not present in this checkout")
    root = tmp_path_factory.mktemp("real-publish")
    out: dict[str, tuple[Path, Path]] = {}
    for run in RUNS:
        name = run.replace("/", "-")
        capture = root / name
        run_ctxtap(["import", str(REAL_CLIENTS / run / "flows.mitm"), "--out", str(capture)], ctxtap_config)
        target = root / f"{name}-published"
        result = run_ctxtap(["publish", str(capture), "-o", str(target)], ctxtap_config)
        assert "final scan clean" in result.stderr
        out[run] = (capture, target)
    return out


@pytest.mark.parametrize("run", RUNS)
def test_no_identity_in_any_published_file(published, run) -> None:
    _, target = published[run]
    files = sorted(target.iterdir())
    assert {f.suffix for f in files} == {".json", ".md"}
    for path in files:
        text = path.read_text(encoding="utf-8")
        for value in FORBIDDEN:
            assert value.lower() not in text.lower(), f"{path.name} still holds {value!r}"
        assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text), path.name


@pytest.mark.parametrize("run", RUNS)
def test_block_order_matches_the_capture(published, run) -> None:
    capture, target = published[run]
    con = connect([capture])
    view: dict[str, list[tuple[str, str]]] = {}
    for request_id, path, kind in con.execute(
        "SELECT request_id, path, kind FROM blocks ORDER BY request_id, position"
    ).fetchall():
        view.setdefault(request_id, []).append((path, kind))
    counts = dict(con.execute("SELECT request_id, 0 FROM requests").fetchall())
    expected = sorted(tuple(view.get(r, [])) for r in counts)
    attachments = [json.loads(p.read_text()) for p in target.glob("*.json")]
    got = []
    for att in attachments:
        for thread in att["threads"] + att["side_requests"]:
            seqs = [r["seq_in_thread"] for r in thread["requests"]]
            assert seqs == sorted(seqs)
            for request, blocks in zip(thread["requests"], full_blocks(thread, att["block_fields"]), strict=True):
                positions = [b["position"] for b in blocks]
                assert positions == list(range(len(positions))) and len(blocks) == request["n_blocks"]
                got.append(tuple((b["path"], b["kind"]) for b in blocks))
                for block in blocks:
                    assert block["content"] in att["contents"]
    assert sorted(got) == expected


@pytest.mark.parametrize("run", RUNS)
def test_manifest_counts_classes_and_rules_without_values(published, run) -> None:
    _, target = published[run]
    for path in target.glob("*.json"):
        manifest = json.loads(path.read_text())["redaction"]
        assert manifest["by_class"] and manifest["by_rule"]
        assert manifest["final_scan"]["detectors"] == ["credentials", "pii", "detect-secrets"]
        assert manifest["identity_learned"]["users"] >= 1
        flat = json.dumps(manifest).lower()
        assert "alice" not in flat and "laptop" not in flat
    md = next(target.glob("*.md")).read_text()
    assert "## Redaction manifest" in md


def test_wording_survives(published) -> None:
    """Pseudonymisation must not touch the vendor's wording, tool names or code."""
    _, target = published["long/claude"]
    att = json.loads(next(target.glob("*.json")).read_text())
    texts = [c.get("text") or "" for c in att["contents"].values()]
    assert any("You are a Claude agent, built on Anthropic's Claude Agent SDK." in t for t in texts)
    tools = [c["tool"]["name"] for c in att["contents"].values() if c["kind"] == "tool_definition"]
    assert {"Bash", "Read", "Edit", "Write"} <= set(tools)
    calls = [c["call"] for c in att["contents"].values() if c["kind"] == "tool_call"]
    assert {"command": "cat README.md", "description": "Run cat README.md (read-only)"} in [c["arguments"] for c in calls]
    env = next(t for t in texts if "Primary working directory" in t)
    assert "Primary working directory: <path-home-1>/work/demo-repo" in env
    readme = next(t for t in (c.get("result", {}).get("text", "") for c in att["contents"].values()) if "Maintainer" in t)
    assert "Maintainer: <name-1> <<email-1>>, <phone-1>" in readme


def test_same_value_same_placeholder_across_headers_and_blocks(published) -> None:
    _, target = published["basic/kimi-code"]
    att = json.loads(next(target.glob("*.json")).read_text())
    first = att["threads"][0]["requests"][0]
    headers = dict(first["headers"]["all"])
    assert headers["X-Msh-Device-Name"] == "<host-1>"
    assert headers["X-Msh-Device-Id"].startswith("<device-")
    # the session id is one placeholder wherever it appears: body field, session, thread
    session = first["parameters"]["all"]["prompt_cache_key"]
    assert session == "session_<session-1>"
    assert att["threads"][0]["session"] == f"kimi-code:{session}"
    codex = json.loads(next(published["basic/codex"][1].glob("*.json")).read_text())
    assert "git@github.com:<account-1>/demo-repo.git" in json.dumps(codex)


def test_packed_blocks_publish_their_sections(published) -> None:
    """Kimi's system message holds rules, environment, the AGENTS.md slot and skills: the attachment says so."""
    _, target = published["basic/kimi-code"]
    (att,) = [json.loads(p.read_text()) for p in target.glob("*.json")]
    first = full_blocks(att["threads"][0], att["block_fields"])[0]
    (system,) = [b for b in first if b["path"] == "messages[0].content"]
    sources = [g["source"] for g in system["segments"]]
    assert system["source"] == "mixed"
    assert sources[0] == "platform_rules" and {"runtime_environment", "project_instructions",
                                                "plugin_catalogue"} <= set(sources)
    assert sum(g["bytes"] for g in system["segments"]) == system["bytes"]
    markdown = next(target.glob("*.md")).read_text()
    assert "Sections, in order: platform_rules" in markdown
