"""Constancy across runs (issue 36, item 2): with several runs of one client version, the text every
run sends is the client's, and the text that varies is the run's — used where no detector decides,
and said in the rule id (`cross-session.*`, evidence `cross-session`)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ctxtap.analysis.threads import constancy
from ctxtap.cli.main import main
from tests.scenarios import _entry

RULES = ("You are Toy, a careful coding agent working for one user.\n"
         "Read the code before you change it, and keep every change small.\n"
         "Run the test suite after each change and report what failed.\n")
TEMPLATE = ("Please solve this task:\n{task}\n\nFollow these steps one after another:\n"
            "1. Inspect the repository before anything else.\n2. Make the change and run the tests again.\n")
EXAMPLE_USER = "Example request: rename foo to bar everywhere in utils.py"
EXAMPLE_ANSWER = "Ok, I will rename foo to bar in utils.py and nowhere else."
RUNS = [("/srv/work/run-{n}", "Add a --verbose flag to the command line parser"),
        ("/srv/work/run-{n}", "Fix the off-by-one error in the pagination helper"),
        ("/srv/work/run-{n}", "Write a docstring for every public function in app.py")]


def _opening(system: str, user: str, assistant: str = "") -> constancy.Opening:
    class B:
        def __init__(self, role: str, text: str) -> None:
            self.role, self.kind, self.text = role, "message_text", text

    blocks = [B("system", system), B("user", user)] + ([B("assistant", assistant)] if assistant else [])
    return constancy.opening_of("toy", "2.0", blocks)


def test_identical_runs_say_nothing_and_differing_runs_say_what_varies() -> None:
    same = [_opening(RULES, TEMPLATE.format(task=RUNS[0][1])) for _ in range(3)]
    assert not constancy.states_of(same)  # everything constant: the environment would be too
    runs = [_opening(RULES, TEMPLATE.format(task=task)) for _, task in RUNS]
    states = constancy.states_of(runs)
    with constancy.using(states):
        verdicts = {v for _, _, v in constancy.line_states(RULES, "system")}
        assert verdicts == {constancy.CONSTANT}
        user = constancy.line_states(TEMPLATE.format(task=RUNS[1][1]), "user")
        assert [v for _, _, v in user if v] == [constancy.CONSTANT, constancy.VARIES, constancy.CONSTANT,
                                               constancy.CONSTANT, constancy.CONSTANT]
    assert not constancy.current()  # the verdicts are in force only inside `using`


def test_another_prompt_is_not_compared_with_the_main_one() -> None:
    sub = "You are a search subagent. Find the files the caller asks for and list their paths only.\n" * 3
    runs = [_opening(RULES, TEMPLATE.format(task=RUNS[0][1])), _opening(sub, "Find the parser module please")]
    assert not constancy.states_of(runs)  # one session of each prompt: nothing to compare
    other_version = _opening(RULES, TEMPLATE.format(task=RUNS[1][1]))
    other_version.version = "2.1"
    assert not constancy.states_of([runs[0], other_version])


def _har(path: Path, n: int) -> Path:
    cwd, task = RUNS[n]
    system = RULES + f"The user's project lives at {cwd.format(n=n)} on the machine box-{n}.\n"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": EXAMPLE_USER},
                {"role": "assistant", "content": EXAMPLE_ANSWER},
                {"role": "user", "content": TEMPLATE.format(task=task)}]
    reply = {"id": "c", "object": "chat.completion", "model": "coder-1", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 90, "completion_tokens": 2, "total_tokens": 92}}
    entry = _entry("https://api.openai.com/v1/chat/completions",
                   [("user-agent", "ToyAgent/2.0 python"), ("content-type", "application/json")],
                   json.dumps({"model": "coder-1", "messages": messages}).encode(), 200,
                   [("content-type", "application/json")], json.dumps(reply).encode(), 1_700_000_000.0 + n, 0.5)
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
                                        "entries": [entry]}}))
    return path


def _segments(runner: CliRunner, capture: Path) -> list[tuple[str, str, str]]:
    shown = runner.invoke(main, ["layout", str(capture), "--explain", "--json"])
    assert shown.exit_code == 0, shown.output
    return [(s["source"], s["rule_id"], s["excerpt"]) for s in json.loads(shown.output)[0]["segments"]]


def test_analyze_across_runs_reads_template_task_canned_turns_and_environment(tmp_path, ctxtap_config) -> None:
    runner = CliRunner()
    captures = []
    for n in range(3):
        capture = tmp_path / f"run{n}"
        done = runner.invoke(main, ["import", str(_har(tmp_path / f"run{n}.har", n)), "--out", str(capture)])
        assert done.exit_code == 0, done.output
        captures.append(capture)
    alone = _segments(runner, captures[0])
    assert not any(rule.startswith("cross-session.") for _, rule, _ in alone)
    assert ("user_task", "generic.first-user-text-task") in {(s, r) for s, r, _ in alone}  # the example, by position

    done = runner.invoke(main, ["analyze", "--across-runs", *map(str, captures)])
    assert done.exit_code == 0, done.output
    assert "read across 3 sessions of 3 captures" in done.output
    across = _segments(runner, captures[1])
    by_rule = {}
    for source, rule, text in across:
        by_rule.setdefault(rule, []).append((source, text))
    assert by_rule["cross-session.varies"][0][0] == "runtime_environment"
    assert "/srv/work/run-1" in by_rule["cross-session.varies"][0][1]
    assert [s for s, _ in by_rule["cross-session.canned-turn"]] == ["platform_rules", "platform_rules"]
    assert any("Example request" in t for _, t in by_rule["cross-session.canned-turn"])
    template = " ".join(t for s, t in by_rule["cross-session.template"] if s == "platform_rules")
    assert "Please solve this task" in template and "Inspect the repository" in template
    task = [t for s, r, t in across if s == "user_task"]
    assert len(task) == 1 and RUNS[1][1] in task[0] and "Follow" not in task[0] and "Please" not in task[0]

    # the peers are remembered: a later command reads the same way, and one capture alone resets it
    assert _segments(runner, captures[1]) == across
    assert runner.invoke(main, ["analyze", "--across-runs", str(captures[1])]).exit_code == 0
    assert not any(r.startswith("cross-session.") for _, r, _ in _segments(runner, captures[1]))
