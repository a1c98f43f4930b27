"""Line-level boundaries and the task the run was given (issue 36, items 1, 3 and 5).

The environment is the lines that state facts, ending at a tag's close; rules that mention a
repository, a sandbox or a path stay rules; a task known from the command line is its own span
inside a client's template, and user text before it is not the task."""

from __future__ import annotations

from ctxtap.analysis.blocks.drafts import BlockDraft
from ctxtap.analysis.blocks.segments import read_pieces
from ctxtap.analysis.clients.rules import Context
from ctxtap.analysis.rules.attribution import attribute
from ctxtap.analysis.rules.detectors import fact_line
from ctxtap.analysis.rules.evidence import evidence_kind
from ctxtap.analysis.threads import runfacts

RULES = ("You are Helper, a coding agent. Keep answers short and cite the files you change.\n"
         "Never run destructive commands without asking the user first.\n")


def _sources(text: str) -> list[tuple[str | None, str]]:
    return [(p.source, text[p.start:p.end].strip()) for p in read_pieces(text)]


def test_fact_lines_at_the_end_of_rules_are_the_environment_and_nothing_else() -> None:
    text = RULES + "Current date: 2026-12-01\nCurrent working directory: /home/qz/proj-8812"
    assert _sources(text) == [(None, RULES.strip()),
                              ("runtime_environment",
                               "Current date: 2026-12-01\nCurrent working directory: /home/qz/proj-8812")]


def test_an_environment_tag_ends_at_its_closing_tag() -> None:
    text = ("Rules first.\n\nEnvironment you are running in:\n<env>\n1. Platform: linux\n2. Date: 12/1/2026\n"
            "3. Working Directory: /home/qz/proj\n</env>\n\nRemember:\n- Always adhere to existing code conventions "
            "and patterns.\n- Use absolute paths when referring to files.\n")
    pieces = _sources(text)
    env = [body for source, body in pieces if source == "runtime_environment"]
    assert len(env) == 1 and env[0].endswith("</env>") and "Remember" not in env[0]
    assert pieces[-1][0] is None and pieces[-1][1].startswith("Remember:")


def test_rules_about_git_and_sandboxes_without_a_fact_stay_rules() -> None:
    text = ("# Git Repository\n- The current working (project) directory is being managed by a git repository.\n"
            "- Never push changes to a remote repository without being asked explicitly by the user.\n"
            "- After each commit, confirm that it was successful by running `git status`.\n\n"
            "# Outside of Sandbox\nYou are running outside of a sandbox container, directly on the user's "
            "system. Explain critical commands before you run them.\n")
    assert {source for source, _ in _sources(text)} == {None}


def test_a_fact_line_states_a_value_a_sentence_does_not() -> None:
    assert fact_line("Current working directory: /home/qz/proj") == "env-line"
    assert fact_line("2. Date: 12/1/2026") == "env-line"
    assert fact_line("Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0 x86_64") == "uname"
    assert fact_line("`sandbox_mode` is `workspace-write`: you may edit files in the workspace.") == "run-condition"
    assert fact_line("- Platform: use the tool the platform offers to do the right thing here") is None
    assert fact_line("You are operating in an environment where") is None
    assert fact_line("Always use absolute paths when referring to files.") is None


def test_a_recorded_fact_line_is_grounded_whatever_its_key() -> None:
    text = RULES + "Opened folder: /srv/qz-4411"
    with runfacts.using({"cwd": "/srv/qz-4411"}):
        pieces = read_pieces(text)
    assert [(p.source, p.rule_id) for p in pieces] == [(None, None), ("runtime_environment", "detect.recorded-fact")]


TASK = "Rename the helper in utils.py and update its three callers"


def _draft(text: str, role: str = "user", item: int = 0) -> BlockDraft:
    return BlockDraft(path=f"messages[{item}].content", kind="message_text", role=role, wire=text, text=text,
                      item_index=item)


def test_tasks_come_from_the_command_line_and_the_prompt_option() -> None:
    command = ["agent", "--model", "m-1", "-t", TASK, "--message=Fix the three failing tests please", "src/app.py"]
    assert runfacts.tasks_of({"prompt": "Explain what this repository does"}, command) == (
        TASK, "Fix the three failing tests please", "Explain what this repository does")
    assert runfacts.tasks_of({}, ["agent", "-p", "fix it"]) == ()  # too short to find honestly


def test_the_known_task_is_its_own_span_and_the_template_around_it_is_read_apart() -> None:
    wrapped = (f"Please solve this issue: {TASK}\n\nYou can execute bash commands and edit files.\n\n"
               "<system_information>\nLinux 6.8.0-45-generic #45 SMP PREEMPT_DYNAMIC x86_64\n</system_information>\n")
    drafts = [_draft("Repository map:\nsrc/app.py\nsrc/utils.py\n"), _draft(wrapped, item=1)]
    with runfacts.using({}, ["agent", "-t", TASK]):
        blocks = attribute(drafts, "unknown", "messages")
    before, task = blocks
    assert (before.source, before.rule_id, evidence_kind(before.rule_id)) == ("unknown", "argv.not-the-task",
                                                                             "unattributed")
    spans = [(s.source, s.rule_id, wrapped.encode()[s.start:s.end].decode().strip()) for s in task.segments]
    assert spans[0] == ("platform_rules", "argv.task-template", "Please solve this issue:")
    assert spans[1] == ("user_task", "argv.task", TASK)
    assert ("runtime_environment", "detect.environment-section") in {(s, r) for s, r, _ in spans}
    assert evidence_kind("argv.task") == "argv"
    # without the command line: the first user text is the task, by position
    blocks = attribute(drafts, "unknown", "messages")
    assert blocks[0].rule_id == "generic.first-user-text-task"


def test_a_request_without_the_known_task_reads_as_before() -> None:
    drafts = [_draft("Summarise this conversation in one line for a title.")]
    with runfacts.using({}, ["agent", "-t", TASK]):
        assert attribute(drafts, "unknown", "messages")[0].rule_id == "generic.first-user-text-task"
    assert Context(client="x", api="y").task_part is None


def test_an_example_exchange_before_the_known_task_is_the_clients_not_the_users_or_the_models() -> None:
    drafts = [_draft("Change get_factorial() to use math.factorial", item=0),
              _draft("To make this change we need to modify app.py.", role="assistant", item=1),
              _draft(TASK, item=2), _draft("I will rename it.", role="assistant", item=3)]
    with runfacts.using({}, ["agent", "--message", TASK]):
        blocks = attribute(drafts, "unknown", "messages")
    assert [(b.source, b.rule_id) for b in blocks] == [
        ("platform_rules", "argv.canned-exchange"), ("platform_rules", "argv.canned-turn"), ("user_task", "argv.task"),
        ("assistant_output", "generic.assistant-text")]
    # user text before the task that no client-written turn answers is not the client's: unattributed
    with runfacts.using({}, ["agent", "--message", TASK]):
        blocks = attribute([drafts[0], drafts[2]], "unknown", "messages")
    assert [(b.source, b.rule_id) for b in blocks] == [("unknown", "argv.not-the-task"), ("user_task", "argv.task")]
    assert [b.source for b in attribute(drafts, "unknown", "messages")] == [
        "user_task", "assistant_output", "user_task", "assistant_output"]  # without the command line: by position
