"""Run conditions as data (issue 38, item 4): the `run_conditions` view over real-client recordings written
through the real capture writer, and `ctxtap diff` flagging conditions that differ."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ctxtap.analysis.rules import conditions as cond
from tests.proxyharness import run_ctxtap
from tests.realcli_fixtures import fixture_entries, write_capture

# -- the rules, without a capture -------------------------------------------------------------------


@pytest.mark.parametrize("argv,sandbox,approval", [
    (["codex", "exec", "--sandbox", "read-only", "-a", "never", "list files"], "read-only", "never"),
    (["/opt/bin/codex", "exec", "-s", "workspace-write", "--ask-for-approval=on-request"], "workspace-write",
     "on-request"),
    (["npx", "-y", "@openai/codex", "exec", "-c", "approval_policy='untrusted'", "-c", 'sandbox_mode="read-only"'],
     "read-only", "untrusted"),
    (["codex", "--full-auto", "go"], "workspace-write", "on-request"),
    (["codex", "exec", "--dangerously-bypass-approvals-and-sandbox"], "danger-full-access", "never"),
    (["claude", "-p", "--permission-mode", "plan", "hi"], None, "plan"),
    (["claude", "--dangerously-skip-permissions", "-p", "hi"], None, "bypassPermissions"),
    (["gemini", "-y", "--sandbox", "-p", "hi"], "on", "yolo"),
    (["gemini", "--approval-mode", "auto_edit", "-p", "hi"], None, "auto_edit"),
    (["sh", "-c", "codex exec --sandbox read-only hi"], "read-only", None),
    # a wrapper's own options are not the client's: npx -y is not yolo, python -c is no config
    (["npx", "-y", "@anthropic-ai/claude-code", "-p", "hi"], None, None),
    (["python", "-c", "print(1)", "-a", "never"], None, "never"),
    (["claude", "-p", "--sandbox-image", "x"], None, None),
])
def test_sandbox_and_approval_flags_on_the_command_line(argv, sandbox, approval) -> None:
    found = cond.from_command(argv)
    assert (found["sandbox"].value if "sandbox" in found else None) == sandbox, found
    assert (found["approval"].value if "approval" in found else None) == approval, found
    for ev in found.values():
        assert ev.source.startswith("command line: ")


def test_request_statements_and_unknown_without_evidence() -> None:
    texts = [("request #1 input[2]", "`sandbox_mode` is `read-only`: files can be read.\n"
                                     "Approval policy is currently on-request. Ask first.")]
    found = cond.from_texts(texts)
    assert found["sandbox"].value == "read-only" and found["approval"].value == "on-request"
    assert "request #1 input[2]" in found["approval"].source and "codex.permissions-instructions" in found[
        "approval"].source
    none = cond.merge({}, {}, "approval")
    assert none.value == "unknown" and "no evidence" in none.source
    both = cond.merge(cond.from_command(["codex", "-a", "never"]), found, "approval")
    assert both.value == "on-request" and "says never" in both.source  # what the client ran with wins, both named


def test_masking_keeps_rules_and_drops_dates_ids_and_paths() -> None:
    a = "You are a coding agent. Today is 2026-12-01; session sess_a1b2c3d4e5 in /home/alice/proj/src."
    b = "You are a coding agent. Today is 2026-12-04; session sess_f9e8d7c6b5 in /home/bob/other/src."
    assert cond.digest([cond.mask(a)]) == cond.digest([cond.mask(b)])
    assert cond.digest([cond.mask(a)]) != cond.digest([cond.mask(a.replace("coding", "careless"))])
    assert cond.mask("cd /work then ask alice", ["/work", "alice"]) == "cd <path> then ask <fact>"


def test_mcp_servers_from_tool_names_and_schemas() -> None:
    tools = [("Bash", "{}"), ("mcp__github__create_issue", "{}"), ("mcp__github__get_file_contents", "{}"),
             ("mcp__filesystem__read_text_file", "{}"), ("mcp__my_server__do__thing", "{}"),
             ("mcp", json.dumps({"type": "mcp", "server_label": "deepwiki", "server_url": "https://x"})),
             ("mcp__ologs", json.dumps({"type": "namespace", "name": "mcp__ologs", "tools": []}))]
    servers, evidence = cond.mcp_servers(tools)
    assert servers == ["deepwiki", "filesystem", "github", "my_server", "ologs"]
    assert "tool name mcp__filesystem__read_text_file" in evidence
    assert any("server_label deepwiki" in e for e in evidence)
    assert cond.mcp_servers([("Read", "{}"), ("mcp_like_tool", "{}")]) == ([], [])


# -- the view over real-client recordings -----------------------------------------------------------


def _bodies(entries: list[dict], edit) -> list[dict]:
    """The entries with each request body (HTTP JSON or WebSocket frame) passed through `edit(text)`."""
    out = copy.deepcopy(entries)
    for e in out:
        post = e["request"].get("postData")
        if post and post.get("text"):
            post["text"] = edit(post["text"])
        for m in e.get("_webSocketMessages") or []:
            if m.get("type") == "send" and isinstance(m.get("data"), str):
                m["data"] = edit(m["data"])
    return out


def _capture(base: Path, name: str, entries: list[dict], command: list[str] | None = None) -> Path:
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.capture.manifest import Manifest

    out = write_capture(base / name, entries, f"20261201-000000-{name}")
    if command is not None:
        manifest = Manifest.load(out)
        manifest.command = command
        manifest.save(out)
    ensure_analysis(out)
    return out


def _conditions(capture: Path) -> dict:
    from ctxtap.analysis.db import connect, fetch_rows

    con = connect([capture])
    try:
        rows = fetch_rows(con, "SELECT * FROM run_conditions")
    finally:
        con.close()
    assert len(rows) == 1, rows
    return rows[0]


def _diff(a: Path, b: Path, config: Path) -> tuple[dict, str]:
    as_json = json.loads(run_ctxtap(["diff", str(a), str(b), "--json"], config).stdout)
    return as_json, run_ctxtap(["diff", str(a), str(b)], config).stdout


CODEX_NEVER = "Approval policy is currently never."


@pytest.fixture(scope="module")
def codex_pair(tmp_path_factory, ctxtap_config) -> tuple[Path, Path]:
    """Codex's real recording, and the same with its permissions instructions saying on-request."""
    base = tmp_path_factory.mktemp("codex-conditions")
    entries = fixture_entries("codex")
    assert CODEX_NEVER in json.dumps(entries)
    on_request = _bodies(entries, lambda t: t.replace("Approval policy is currently never",
                                                      "Approval policy is currently on-request"))
    return _capture(base, "never", entries), _capture(base, "onrequest", on_request)


def test_codex_conditions_are_read_from_its_request(codex_pair) -> None:
    row = _conditions(codex_pair[0])
    assert (row["client"], row["client_version"]) == ("codex", "0.171.0")
    assert row["sandbox"] == "danger-full-access" and row["approval"] == "never"
    assert "`sandbox_mode` is `danger-full-access`" in row["sandbox_source"]
    assert row["approval_source"].startswith(f"request #{row['request_number']} input[")
    assert row["working_dir"] == "/home/alice/work/demo-repo" and "request #" in row["working_dir_source"]
    assert row["git_head"] == "unknown" and row["git_dirty"] is None  # an import: nothing recorded, nothing guessed
    assert row["mcp_servers"] == "none" and row["n_tools"] > 0 and row["rules_digest"] and row["tools_digest"]


def test_diff_flags_a_different_approval_mode(codex_pair, ctxtap_config) -> None:
    a, b = codex_pair
    rows = _conditions(a), _conditions(b)
    assert rows[1]["approval"] == "on-request"
    as_json, text = _diff(a, b, ctxtap_config)
    diffs = as_json["conditions"]["differences"]
    assert {"field": "approval", "label": "approval mode", "a": "never", "b": "on-request"} in diffs
    assert "conditions differ: approval mode never -> on-request" in text
    page = a.parent / "diff.html"
    run_ctxtap(["diff", str(a), str(b), "-o", str(page)], ctxtap_config)
    assert "Conditions differ: approval mode never -&gt; on-request" in page.read_text()
    assert "Approval policy is currently on-request" in text  # where B's value was read
    # the rest of the rules is the same sentence for sentence; the permissions text is a rule too
    assert [d["field"] for d in diffs] == ["approval", "rules_digest"] or [d["field"] for d in diffs] == ["approval"]
    assert "conditions differ" not in _diff(a, a, ctxtap_config)[1]


def test_same_client_with_only_a_date_in_its_rules_agrees(tmp_path, ctxtap_config) -> None:
    """Claude Code's real recording with a date in a paragraph of its system prompt and a path in its harness
    section, both differing between two runs: the same rules digest (masked); one changed rule gives another."""
    rule = "A name doesn't tell you someone's pronouns"
    harness = "Reference code as `file_path:line_number`"
    entries = fixture_entries("claude")
    assert rule in json.dumps(entries, ensure_ascii=False) and harness in json.dumps(entries, ensure_ascii=False)

    def stamped(date: str, where: str, verb: str = "hard to reverse") -> list[dict]:
        def edit(text: str) -> str:
            text = text.replace(rule, f"As our policy of {date} says, a name doesn't tell you someone's pronouns")
            text = text.replace(harness, f"{harness} (style guide in {where}/STYLE.md)")
            return text.replace("For actions that are hard to reverse", f"For actions that are {verb}")
        return _bodies(entries, edit)

    one = _capture(tmp_path, "one", stamped("2026-12-01", "/home/alice/work/demo-repo"))
    two = _capture(tmp_path, "two", stamped("December 4, 2026", "/home/bob/clone"))
    changed = _capture(tmp_path, "changed", stamped("2026-12-01", "/home/alice/work/demo-repo", "easy to reverse"))
    r1, r2, r3 = _conditions(one), _conditions(two), _conditions(changed)
    assert r1["rules_blocks"] >= 4  # system[0..3], and its mid-conversation system text
    assert r1["rules_digest"] == r2["rules_digest"] and r1["tools_digest"] == r2["tools_digest"]
    assert r3["rules_digest"] != r1["rules_digest"] and r3["tools_digest"] == r1["tools_digest"]
    as_json, text = _diff(one, changed, ctxtap_config)
    assert [d["field"] for d in as_json["conditions"]["differences"]] == ["rules_digest"]
    assert f"conditions differ: rules digest {r1['rules_digest']} -> {r3['rules_digest']}" in text
    assert "conditions: same (claude-code 2.1.332" in _diff(one, two, ctxtap_config)[1]


def test_permission_mode_from_the_recorded_command_and_mcp_servers_from_tools(tmp_path, ctxtap_config) -> None:
    entries = fixture_entries("claude")
    mcp_tool = {"name": "mcp__github__create_issue", "description": "Create an issue in a GitHub repository.",
                "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}}}

    def add_tool(text: str) -> str:
        body = json.loads(text)
        if isinstance(body.get("tools"), list) and body["tools"]:
            body["tools"].append(mcp_tool)
        return json.dumps(body)

    plain = _capture(tmp_path, "plain", entries, ["claude", "-p", "--permission-mode", "acceptEdits", "list"])
    mcp = _capture(tmp_path, "mcp", _bodies(entries, add_tool), ["claude", "--dangerously-skip-permissions", "-p",
                                                                   "list"])
    a, b = _conditions(plain), _conditions(mcp)
    assert a["approval"] == "acceptEdits" and a["approval_source"] == "command line: --permission-mode acceptEdits"
    assert b["approval"] == "bypassPermissions" and a["sandbox"] == "unknown"
    assert (a["mcp_servers"], b["mcp_servers"]) == ("none", "github")
    assert b["mcp_source"] == "tool name mcp__github__create_issue" and b["n_tools"] == a["n_tools"] + 1
    as_json, text = _diff(plain, mcp, ctxtap_config)
    fields = [d["field"] for d in as_json["conditions"]["differences"]]
    assert fields == ["approval", "tools_digest", "mcp_servers"], fields
    assert "conditions differ: approval mode acceptEdits -> bypassPermissions" in text
    assert "conditions differ: MCP servers offered none -> github" in text


def test_push_pseudonymise_replaces_the_working_directory(codex_pair) -> None:
    """`push --pseudonymise` sends run_conditions through publish's personal-data pass (`publish` itself leaves
    the table out: tests/capture/test_effects.py checks that no file it writes holds the working directory)."""
    import pyarrow.parquet as pq

    from ctxtap.capture.manifest import Manifest
    from ctxtap.store.pseudonymise import Pseudonymiser

    capture = codex_pair[0]
    [part] = list((capture / "analysis" / "run_conditions").glob("capture_id=*/*.parquet"))
    table = pq.read_table(part)
    assert table.column("working_dir").to_pylist() == ["/home/alice/work/demo-repo"]
    out = Pseudonymiser.for_capture(capture, Manifest.load(capture)).table(table)
    [cwd] = out.column("working_dir").to_pylist()
    assert "alice" not in cwd and cwd.endswith("/work/demo-repo"), cwd
    assert out.column("approval").to_pylist() == ["never"]  # the conditions themselves stay comparable
