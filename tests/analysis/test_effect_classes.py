"""The effect class of proposed tool calls (issue 38, item 2): the classifier on shell shapes and on
several clients' tools, the held-out score, real recordings, and a recorded run whose proposed writes
are joined to its effect receipt (one happened, one did not, one nobody proposed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxtap.analysis.threads.effectclass import CallEffect, classify_call, classify_shell

WS = "/home/alice/work/demo-repo"
HOME = "/home/alice"
ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def shell(command: str, cwd: str | None = None) -> CallEffect:
    return classify_shell(command, WS, HOME, cwd)


def call(name: str, arguments: dict | str, **kw) -> CallEffect:
    return classify_call(name, arguments if isinstance(arguments, str) else json.dumps(arguments),
                         workspace=WS, home=HOME, **kw)


def paths(e: CallEffect) -> list[tuple[str, str, bool | None]]:
    return [(p.path, p.access, p.inside) for p in e.paths]


# --- shell shapes ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("command", "primary", "classes"), [
    ("ls -la", "read", {"read"}),
    ("cat README.md | grep -n foo | sort | uniq -c", "read", {"read"}),
    ("rm -rf build", "destructive", {"destructive"}),
    ("mv a.txt b.txt", "write", {"write"}),
    ("curl -s https://example.com", "network", {"network"}),
    ("wget https://example.com/x.tgz", "write", {"network", "write"}),
    ("git push origin main", "network", {"network"}),
    ("git push --force origin main", "destructive", {"network", "destructive"}),
    ("git status && git diff", "read", {"read"}),
    ("git commit -am wip", "write", {"write"}),
    ("git reset --hard HEAD", "destructive", {"destructive"}),
    ("npm install left-pad", "write", {"network", "write"}),
    ("npm test", "execute", {"execute"}),
    ("pip install requests", "write", {"network", "write"}),
    ("python3 script.py", "execute", {"execute"}),
    ("./configure && make", "execute", {"execute"}),
    ("frobnicate --all", "execute", {"execute"}),
    ("echo hi > out.txt", "write", {"read", "write"}),
    ("echo hi 2>/dev/null", "read", {"read"}),
    ("sed -i 's/a/b/' f.txt", "write", {"write"}),
    ("find . -name '*.pyc' -delete", "destructive", {"read", "destructive"}),
    ("kill -9 1234", "destructive", {"destructive"}),
    ("X=1 Y=2", "read", {"read"}),
])
def test_simple_commands(command, primary, classes) -> None:
    e = shell(command)
    assert e.parse_status == "parsed", e.parse_detail
    assert (e.primary, set(e.classes)) == (primary, classes), e.rules


def test_compound_lists_pipes_and_subshells_are_split() -> None:
    e = shell("ls && (cd src; rm -f old.py) || echo failed; cat a | tee b.log")
    assert e.commands == ["ls:read", "cd:read", "rm:destructive", "echo:read", "cat:read", "tee:write"]
    assert paths(e) == [("old.py", "destructive", True), ("a", "read", True), ("b.log", "write", True)]
    assert e.paths[0].resolved == f"{WS}/src/old.py"  # cd moved the base inside the subshell
    assert e.paths[1].resolved == f"{WS}/a"  # ... and only there


def test_redirections_are_writes_of_their_target_and_reads_of_their_source() -> None:
    e = shell("sort < in.txt >> ../sorted.txt 2>&1")
    assert paths(e) == [("in.txt", "read", True), ("../sorted.txt", "write", False)]
    assert "shell.redirect-append" in e.rules and "shell.redirect-in" in e.rules
    assert e.scope == "mixed"
    assert paths(shell("make &> build.log")) == [("build.log", "write", True)]


def test_quoted_strings_are_one_word() -> None:
    e = shell("rm -f 'my file.txt' \"other file.txt\" plain\\ name.txt")
    assert [p.path for p in e.paths] == ["my file.txt", "other file.txt", "plain name.txt"]
    assert shell("echo 'rm -rf /' ; grep 'a && b' x").classes == ["read"]


def test_heredocs_write_their_target_and_feed_a_shell_or_a_patch() -> None:
    e = shell("cat > notes.md <<'EOF'\nrm -rf everything\nEOF")
    assert e.classes == ["read", "write"] and paths(e) == [("notes.md", "write", True)]
    fed = shell("cat <<'EOF' | bash\nrm -rf /tmp/x\nEOF")
    assert "destructive" in fed.classes and paths(fed) == [("/tmp/x", "destructive", False)]
    patch = shell("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: new.py\n+x\n*** Delete File: old.py\n"
                  "*** End Patch\nEOF")
    assert paths(patch) == [("new.py", "write", True), ("old.py", "destructive", True)]


def test_substitutions_and_nested_shell_strings_are_read() -> None:
    e = shell("echo $(rm -rf cache) `ls`")
    assert "destructive" in e.classes and ("cache", "destructive", True) in paths(e)
    nested = shell("bash -lc 'cd /etc && cat hosts'")
    assert paths(nested) == [("hosts", "read", False)] and nested.paths[0].resolved == "/etc/hosts"
    assert shell("sh -c \"curl -s https://x.test | sh\"").primary == "network"
    assert paths(shell("bash <<< 'rm -rf x'")) == [("x", "destructive", True)]  # a here-string fed to a shell


def test_env_assignments_sudo_xargs_and_other_wrappers_are_stepped_over() -> None:
    e = shell("FOO=1 sudo -u root rm -rf /var/cache/app")
    assert e.primary == "destructive" and "shell.wrapper.sudo" in e.rules
    assert paths(e) == [("/var/cache/app", "destructive", False)]
    assert shell("find . -name '*.log' | xargs -n 1 rm").primary == "destructive"
    assert shell("env -u HOME PATH=/bin timeout 5 curl https://x.test").primary == "network"
    assert shell("nohup nice -n 5 python3 server.py &").primary == "execute"
    assert shell("find src -type f -exec sed -i s/a/b/ {} +").primary == "write"


def test_paths_are_placed_inside_or_outside_the_workspace() -> None:
    assert shell("cat src/app.py").scope == "inside"
    assert shell("cat ../other/secret").scope == "outside"
    assert shell("cat ~/.ssh/id_rsa").paths[0].resolved == "/home/alice/.ssh/id_rsa"
    assert shell("cat ~/.ssh/id_rsa").scope == "outside"
    assert shell("cat /etc/passwd").scope == "outside"
    assert shell("cat $WORKDIR/x").scope == "unknown"
    assert shell("cat \"$HOME/.bashrc\"").scope == "outside"
    assert shell("ls").scope == "none"
    assert shell("cat x", cwd="/tmp").scope == "outside"  # a shell tool's cwd argument
    assert classify_shell("cat x", None).scope == "unknown"  # no working directory recorded


def test_a_command_the_parser_cannot_read_is_unparsed_with_the_reason() -> None:
    e = shell('echo "unterminated && rm -rf /')
    assert e.parse_status == "unparsed" and "syntax error at byte" in e.parse_detail
    assert e.classes == ["execute"] and e.rules == ["shell.unparsed"] and e.paths == []
    deep = shell("bash -c \"bash -c 'bash -c \\\"bash -c \\\\\\\"bash -c ls\\\\\\\"\\\"'\"")
    assert deep.parse_status in ("parsed", "unparsed")  # bounded either way


# --- clients' tools --------------------------------------------------------------------------------
def test_claude_code_tools() -> None:
    assert call("Bash", {"command": "rm -rf dist && npm run build"}).primary == "destructive"
    read = call("Read", {"file_path": f"{WS}/src/app.py"})
    assert (read.primary, read.scope, read.rules) == ("read", "inside", ["name.read"])
    write = call("Write", {"file_path": "/etc/hosts", "content": "x"})
    assert (write.primary, write.scope) == ("write", "outside")
    edit = call("Edit", {"file_path": "src/a.py", "old_string": "a", "new_string": "b"})
    assert (edit.primary, paths(edit)) == ("write", [("src/a.py", "write", True)])
    assert call("Glob", {"pattern": "**/*.py"}).primary == "read"
    assert call("WebFetch", {"url": "https://example.com", "prompt": "x"}).primary == "network"
    assert call("NotebookEdit", {"notebook_path": "a.ipynb", "new_source": "x"}).primary == "write"


def test_codex_tools() -> None:
    sh = call("shell", {"command": ["bash", "-lc", "cat README.md > copy.md"], "workdir": WS})
    assert (sh.primary, sh.parse_status) == ("write", "parsed")
    assert ("copy.md", "write", True) in paths(sh)
    patch = call("apply_patch", "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n"
                                "*** Delete File: ../outside.py\n*** End Patch\n")
    assert patch.primary == "destructive" and patch.scope == "mixed"
    assert patch.rules == ["patch.update-file", "patch.delete-file"]
    code_mode = call("exec", 'const r = await tools.exec_command({cmd: "git push origin main"});')
    assert code_mode.primary == "network"


def test_gemini_cli_tools() -> None:
    e = call("run_shell_command", {"command": "cat app.py", "directory": "src"})
    assert e.paths[-1].resolved == f"{WS}/src/app.py"
    assert call("write_file", {"file_path": "../out.txt", "content": "x"}).scope == "outside"
    assert call("read_file", {"absolute_path": f"{WS}/x"}).primary == "read"
    assert call("list_directory", {"dir_path": "."}).scope == "inside"


def test_an_mcp_tool_with_a_path_argument() -> None:
    e = call("mcp__filesystem__write_file", {"path": "/tmp/notes.md", "content": "x"})
    assert (e.primary, e.scope, paths(e)) == ("write", "outside", [("/tmp/notes.md", "write", False)])
    assert call("mcp__docs__read_page", {"uri": "https://example.com/a"}).primary == "network"


def test_a_tool_with_no_evidence_is_unknown_never_guessed() -> None:
    e = call("frobnicate", {"level": 3})
    assert (e.primary, e.classes, e.rules) == ("unknown", [], [])
    unknown_with_path = call("mcp__acme__sync", {"target": "notes/a.md"})
    assert unknown_with_path.primary == "unknown" and paths(unknown_with_path) == [("notes/a.md", "unknown", True)]
    assert call("Task", {"prompt": "x", "description": "y"}).primary == "unknown"


def test_the_offered_schema_and_description_are_evidence() -> None:
    schema = {"properties": {"thing": {"type": "string", "description": "Absolute path to the file to change"}}}
    e = call("zap", {"thing": "/tmp/a"}, schema=schema, description="Deletes the given file.")
    assert (e.primary, e.rules, paths(e)) == ("destructive", ["description.destructive"],
                                              [("/tmp/a", "destructive", False)])
    assert call("zap", {"x": 1}).primary == "unknown"  # the same call without them


# --- held-out score -----------------------------------------------------------------------------------
def heldout_score(name: str = "heldout.json") -> dict:
    """Precision and recall of the primary class on the held-out calls (labelled before the rules ran on them)."""
    data = json.loads((ROOT / "tests" / "fixtures" / "effect_classes" / name).read_text())
    classes = ("read", "write", "execute", "network", "destructive", "unknown")
    tp = dict.fromkeys(classes, 0)
    predicted = dict.fromkeys(classes, 0)
    gold = dict.fromkeys(classes, 0)
    scope_ok = scope_n = correct = 0
    misses = []
    for c in data["calls"]:
        e = classify_call(c["name"], c["arguments"], workspace=data["workspace"], home=data["home"])
        ok = e.primary in c["accept"]
        correct += ok
        predicted[e.primary] += 1
        gold[c["gold"]] += 1
        if ok:
            tp[e.primary] += 1
        else:
            misses.append((c["name"], c["arguments"][:60], c["gold"], e.primary))
        if c["scope"] is not None:
            scope_n += 1
            scope_ok += e.scope == c["scope"]
    per_class = {k: {"precision": tp[k] / predicted[k] if predicted[k] else None,
                     "recall": min(1.0, tp[k] / gold[k]) if gold[k] else None,
                     "predicted": predicted[k], "gold": gold[k]} for k in classes}
    return {"n": len(data["calls"]), "accuracy": correct / len(data["calls"]), "per_class": per_class,
            "scope_accuracy": scope_ok / scope_n if scope_n else None, "scope_n": scope_n, "misses": misses}


@pytest.mark.parametrize(("name", "accuracy", "scope"), [("heldout.json", 0.89, 0.96), ("heldout2.json", 0.91, 0.92)])
def test_heldout_score_stays_above_its_first_measurement(name, accuracy, scope) -> None:
    """Each set's first run, before any rule saw it: heldout.json 127 of 142 primary classes accepted (0.894),
    48 of 50 scopes right; heldout2.json (labelled after heldout.json's misses were worked on) 98 of 107
    (0.916), 39 of 42 scopes. Rules tuned since may raise them, never lower them."""
    score = heldout_score(name)
    assert score["accuracy"] >= accuracy, score["misses"]
    assert score["scope_accuracy"] >= scope


# --- real recordings -----------------------------------------------------------------------------------
@pytest.mark.skipif(not (SHARED / "real-clients").is_dir(), reason="the shared real-client recordings are absent")
def test_real_clients_shell_calls_are_reads_inside_the_workspace(tmp_path, ctxtap_config) -> None:
    """The shared recordings' `long` scenario (pwd, ls, cat, wc, ls src docs) through `ctxtap import`."""
    from tests.proxyharness import ctxtap_env

    flows = SHARED / "real-clients" / "long" / "claude" / "flows.mitm"
    out = tmp_path / "cap"
    done = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", "import", str(flows), "-o", str(out),
                           "--cwd", WS], env=ctxtap_env(ctxtap_config), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    rows = _sql(out, "SELECT effect_class, workspace_scope, commands FROM call_effects ORDER BY commands")
    assert len(rows) >= 6 and {r["effect_class"] for r in rows} == {"read"}
    assert {r["workspace_scope"] for r in rows} <= {"inside", "none"}
    assert any(r["commands"] == "cat:read" and r["workspace_scope"] == "inside" for r in rows)


def _sql(capture: Path, query: str) -> list[dict]:
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect, fetch_rows

    ensure_analysis(capture)
    con = connect([capture])
    try:
        return fetch_rows(con, query)
    finally:
        con.close()


# --- a recorded run joined to its receipt -----------------------------------------------------------
@pytest.fixture(scope="module")
def joined_run(tmp_path_factory, ctxtap_config) -> Path:
    from tests.capture.recorded_agent import _record

    steps = [{"calls": ["echo hi > notes.txt",
                        {"command": "x", "tool": "Write", "arguments": {"file_path": "plan.md", "content": "# plan"}},
                        "python3 -c \"open('hidden.txt', 'w').write('x')\"", "mv README.md docs.md"]},
             {"text": "done"}]
    out, done = _record(tmp_path_factory.mktemp("joined"), "joined", steps, ctxtap_config)
    assert done.returncode == 0, done.stderr
    return out


def test_a_recorded_run_shows_proposed_writes_that_did_and_did_not_happen_and_an_unproposed_one(joined_run) -> None:
    rows = _sql(joined_run, "SELECT name, path, rel_path, change, verdict, check_status FROM effect_calls "
                            "ORDER BY verdict, coalesce(path, rel_path)")
    got = [(r["verdict"], r["name"], r["path"], r["rel_path"], r["change"]) for r in rows]
    assert got == [("proposed_and_happened", "Bash", "README.md", "docs.md", "renamed"),  # mv's source ...
                   ("proposed_and_happened", "Bash", "docs.md", "docs.md", "renamed"),  # ... and its target
                   ("proposed_and_happened", "Bash", "notes.txt", "notes.txt", "created"),
                   ("proposed_not_seen", "Write", "plan.md", None, None),
                   ("unproposed", None, None, "hidden.txt", "created")]
    assert [r["check_status"] for r in rows][2:4] == ["ok", "unknown_tool"]
    classes = sorted(r["name"] + ":" + r["effect_class"] for r in _sql(joined_run, "SELECT * FROM call_effects"))
    assert classes == ["Bash:execute", "Bash:write", "Bash:write", "Write:write"]


def test_the_report_gives_each_calls_class_in_sentences(joined_run, tmp_path) -> None:
    from ctxtap.reports.html.render import render_report

    html = tmp_path / "report.html"
    render_report([joined_run], html)
    text = html.read_text()
    assert "4 tool calls proposed: 3 write, 1 execute." in text
    assert "Bash <code>echo hi &gt; notes.txt</code> — write (tool.shell-command, shell.read.echo, shell.redirect-write), inside " \
           "the working directory" in text
    assert "proposed a write of plan.md that the receipt does not show" in text
    assert "hidden.txt (created) was written by no proposed call" in text
    assert "Bash proposed a deletion of README.md; the receipt shows docs.md (renamed)." in text


def test_check_judges_no_writes_on_proposed_calls_when_there_is_no_receipt(tmp_path) -> None:
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.rules.constraints import Gates, check
    from tests.realcli_fixtures import fixture_entries, write_capture

    out = write_capture(tmp_path / "cap", fixture_entries("claude"), "nr1")
    ensure_analysis(out)
    con = connect([out])
    try:
        report = check(con, Gates(no_writes=True))
    finally:
        con.close()
    # the committed recording's calls only read: no receipt and no proposed write -> cannot judge
    assert not report.results[0].judged


def test_without_a_receipt_no_writes_is_judged_on_the_proposed_writes(joined_run, tmp_path) -> None:
    import shutil

    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect
    from ctxtap.analysis.rules.constraints import Gates, check

    bare = tmp_path / "bare"
    shutil.copytree(joined_run, bare)
    for name in ("effects.parquet", "effect_roots.parquet"):
        (bare / name).unlink()
    shutil.rmtree(bare / "analysis", ignore_errors=True)
    ensure_analysis(bare)
    con = connect([bare])
    try:
        result = check(con, Gates(no_writes=True)).results[0]
    finally:
        con.close()
    assert result.judged and "may not have happened" in result.how
    assert [v.what for v in result.violations] == ["Bash proposed a write of notes.txt",
                                                   "Write proposed a write of plan.md",
                                                   "Bash proposed a write of README.md, docs.md"]
    assert "no receipt says whether it ran" in result.violations[0].evidence


def test_an_action_argument_selects_what_a_multi_action_tool_does() -> None:
    """Anthropic's text editor tool: `command` is view/create/str_replace, not a shell command."""
    view = call("str_replace_based_edit_tool", {"command": "view", "path": f"{WS}/README.md"})
    assert (view.primary, view.rules, view.parse_status) == ("read", ["arg.command.read"], "not_shell")
    create = call("str_replace_editor", {"command": "create", "path": "/tmp/x.py", "file_text": "x"})
    assert (create.primary, create.scope) == ("write", "outside")
    schema = {"properties": {"action": {"type": "string", "enum": ["list", "delete"]}}}
    assert call("jobs", {"action": "delete", "id": "1"}, schema=schema).primary == "destructive"
    assert call("Bash", {"command": "ls"}).rules == ["tool.shell-command", "shell.read.ls"]  # a shell runs ls


def test_name_verbs_are_base_forms_and_nested_entries_name_paths() -> None:
    assert call("team_list_runs", {}).primary == "read"  # `runs` is a noun here
    assert call("await_runs", {}).primary == "unknown"
    e = call("read_files", {"files": [{"path": "src/a.py"}, {"path": "/etc/passwd"}]})
    assert (e.primary, e.scope) == ("read", "mixed")
    assert call("fetch_many", {"requests": [{"url": "https://example.com"}]}).primary == "network"


def test_an_unproposed_change_names_the_calls_that_named_its_path(joined_run, tmp_path) -> None:
    """hidden.txt was written by a python3 -c call that named no path; a later read of it is named_by."""
    rows = _sql(joined_run, "SELECT rel_path, unnamed_writers, named_by FROM effect_calls WHERE verdict = 'unproposed'")
    assert [(r["rel_path"], r["unnamed_writers"], r["named_by"]) for r in rows] == [("hidden.txt", None, None)]


def test_patches_resolve_against_the_commands_directory() -> None:
    argv = call("shell", {"command": ["apply_patch", "*** Begin Patch\n*** Update File: a.py\n@@\n-a\n+b\n"
                                                     "*** End Patch\n"], "workdir": f"{WS}/sub"})
    assert [(p.path, p.access, p.resolved) for p in argv.paths] == [
        (f"{WS}/sub", "cwd", f"{WS}/sub"), ("a.py", "write", f"{WS}/sub/a.py")]
    heredoc = call("exec_command", {"cmd": "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: x.py\n"
                                           "*** End Patch\nEOF"})
    assert heredoc.primary == "destructive" and heredoc.paths[-1].resolved == f"{WS}/sub/x.py"


def test_a_description_counts_only_for_the_verb_it_leads_with() -> None:
    assert call("zap", {}, description="Reads a note from the store.").primary == "read"
    assert call("zap", {}, description="A tool that lets you run commands.").primary == "execute"
    assert call("zap", {}, description="Use this tool to delete a record.").primary == "destructive"
    assert call("zap", {}, description="Use this tool when you have finished writing your plan.").primary == "unknown"


def test_keys_that_only_sometimes_name_a_path_need_a_path_shaped_value() -> None:
    assert call("Deploy", {"target": "prod"}).paths == []
    assert call("send_note", {"to": "bob", "text": "hi"}).paths == []
    assert paths(call("copy", {"source": "a.txt", "destination": "/tmp/b.txt"})) == [
        ("a.txt", "read", True), ("/tmp/b.txt", "write", False)]
