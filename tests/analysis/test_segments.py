"""Segments inside blocks: structure-only splitting that never loses a byte, and client-independent
detectors that read the shapes coding clients use (own fixtures imitating each shape)."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from ctxtap.analysis.blocks.segments import byte_offsets, read_pieces, split_units
from ctxtap.analysis.rules.detectors import detect, looks_like_list

RULES = textwrap.dedent("""\
    You are a coding agent. Follow the user's instructions carefully and prefer small, reviewable changes.

    # Coding

    Write code that fits the code around it. Do not add dependencies without asking. Keep functions
    small and name them for what they do. Run the tests before you say a change is done.
    """)


def _sources(text: str) -> list[tuple[str | None, str]]:
    return [(p.source, text[p.start:p.end].strip()[:40]) for p in read_pieces(text)]


def _source_of(text: str, needle: str) -> str | None:
    at = text.index(needle)
    for p in read_pieces(text):
        if p.start <= at < p.end:
            return p.source
    raise AssertionError("pieces do not cover the text")


# --- tiling -------------------------------------------------------------------------------

lines = st.sampled_from([
    "# Environment", "## Skills", "<env>", "</env>", "<system-reminder>", "</system-reminder>", "```", "~~~",
    "- name: does things", "Current working directory: /home/u/repo", "Today's date is 2026-01-02.", "",
    "plain words here", "├── src/", "  indented", "\r", "<a>x</a>", "<unclosed", "###", "# ",
])


@given(st.lists(lines, max_size=40), st.booleans())
def test_units_and_pieces_tile_the_text(parts: list[str], final_newline: bool) -> None:
    text = "\n".join(parts) + ("\n" if final_newline else "")
    units = split_units(text)
    assert "".join(text[u.start:u.end] for u in units) == text
    assert all(a.end == b.start for a, b in zip(units, units[1:], strict=False))
    pieces = read_pieces(text)
    assert "".join(text[p.start:p.end] for p in pieces) == text
    assert pieces[0].start == 0 and pieces[-1].end == len(text)


@given(st.text(max_size=400))
def test_any_text_tiles(text: str) -> None:
    pieces = read_pieces(text)
    assert "".join(text[p.start:p.end] for p in pieces) == text


def test_byte_offsets_count_utf8() -> None:
    text = "añb€c"
    assert byte_offsets(text, [0, 1, 2, 3, 4, 5]) == [0, 1, 3, 4, 7, 8]


# --- shapes seen on real clients, imitated ---------------------------------------------------

def test_rules_then_environment_lines_at_the_end_of_one_system_block() -> None:
    text = RULES + "\nCurrent date: 2026-11-30\nCurrent working directory: /home/dev/project\nPlatform: linux\n"
    assert _source_of(text, "You are a coding agent") is None  # the block's own reading (rules) stays
    assert _source_of(text, "Current working directory") == "runtime_environment"


def test_an_env_tag_in_the_middle_of_rules() -> None:
    text = (RULES + "\n<env>\nWorking directory: /srv/app\nIs directory a git repo: yes\nPlatform: darwin\n"
            "Today's date: Mon Nov 30 2026\n</env>\n\n" + RULES)
    assert _source_of(text, "Working directory: /srv/app") == "runtime_environment"
    assert _source_of(text, "You are a coding agent") is None
    assert _source_of(text, "Keep functions") is None


def test_session_context_wrapper_is_environment() -> None:
    text = ("<session_context>\nThis is the CLI. We are setting up the context for our chat.\n"
            "Today's date is Monday, November 30, 2026.\nMy operating system is: linux\n"
            "I'm currently working in the directory: /home/dev/repo\n</session_context>")
    assert [s for s, _ in _sources(text)] == ["runtime_environment"]


def test_legacy_system_prompt_with_cwd_listing_and_date() -> None:
    text = RULES + textwrap.dedent("""
        # Working Directory

        The current working directory is `/home/dev/demo`. The directory listing is:

        ```
        ├── src/
        │   └── app.py
        └── README.md
        ```

        # Date and Time

        The current date and time is 2026-11-30T10:00:00+00:00.
        """)
    assert _source_of(text, "The current working directory") == "runtime_environment"
    assert _source_of(text, "├── src/") == "runtime_environment"
    assert _source_of(text, "The current date and time") == "runtime_environment"
    assert _source_of(text, "Write code that fits") is None


def test_uname_output_and_task_in_the_first_user_message() -> None:
    text = ("Please list the files in this repository and tell me what the project does.\n\n"
            "System information:\nLinux devbox 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\n"
            "Shell: /bin/zsh\nCurrent working directory: /home/dev/repo\n")
    assert _source_of(text, "Please list the files") is None
    assert _source_of(text, "Linux devbox") == "runtime_environment"


def test_catalogues_of_deferred_tools_agents_and_skills() -> None:
    text = textwrap.dedent("""\
        # Environment
        You have been invoked in the following environment:
         - Primary working directory: /home/dev/repo
         - Platform: linux

        The following deferred tools are now available via ToolSearch:
        CronCreate
        NotebookEdit
        WebFetch
        WebSearch

        Available agent types for the Agent tool:
        - general-purpose: researches complex questions (Tools: *)
        - Explore: read-only search agent
        - Plan: designs implementation plans

        The following skills are available for use with the Skill tool:

        - review: reviews the current diff for bugs
        - simplify: simplifies changed code
        - init: writes a project memory file
        """)
    assert _source_of(text, "Primary working directory") == "runtime_environment"
    assert _source_of(text, "NotebookEdit") == "tool_catalogue"
    assert _source_of(text, "Explore: read-only") == "tool_catalogue"
    assert _source_of(text, "simplify:") == "plugin_catalogue"
    assert _source_of(text, "The following skills are available") == "plugin_catalogue"


def test_project_instructions_section_and_quoted_agents_md() -> None:
    text = RULES + textwrap.dedent("""
        # Project information

        The applicable `AGENTS.md` instructions are:

        ```
        Run `make test` before committing. Never edit generated files.
        ```
        """)
    assert _source_of(text, "Run `make test`") == "project_instructions"
    quoted = "Contents of /home/dev/repo/CLAUDE.md (project instructions, checked into the codebase):\n\nUse tabs."
    assert _source_of(quoted, "Use tabs") == "project_instructions"


def test_a_passing_mention_of_agents_md_is_not_project_instructions() -> None:
    text = ("When you must ask for confirmation, say where the rule came from (for example, a SKILL.md, AGENTS.md, "
            "memory, or approval auto-review block) and why you need the confirmation, then continue with the work.\n"
            "Do not stop for trivia.")
    assert detect(text) is None


def test_reminders_and_reminders_that_carry_the_environment() -> None:
    plain = "<system-reminder>\nAuto permission mode is active. Continue without pausing for approvals.\n</system-reminder>"
    dated = "<system-reminder>\nToday's date is 2026-11-29. Rely on the latest such reminder.\n</system-reminder>"
    git = ("<system-reminder>\n# gitStatus\nCurrent branch: main\nStatus:\n M src/app.py\n"
           "Recent commits:\nabc123 first\n</system-reminder>")
    assert _sources(plain)[0][0] == "system_reminder"
    assert _sources(dated)[0][0] == "runtime_environment"
    assert _sources(git)[0][0] == "runtime_environment"


def test_repository_files_pasted_before_the_task() -> None:
    text = ("Here is some context from the repository.\n\nsrc/app.py:\n```python\nimport csv\n\n"
            "def main(path):\n    return list(csv.reader(open(path)))\n```\n\n"
            "<file path=\"README.md\">\n# demo\nA small project.\n</file>\n\n"
            "Now explain what main() does.")
    assert _source_of(text, "import csv") == "runtime_environment"
    assert _source_of(text, "A small project") == "runtime_environment"
    assert _source_of(text, "Now explain") is None


def test_summary_after_compaction() -> None:
    text = ("This session is being continued from a previous conversation that ran out of context. "
            "The conversation is summarized below:\n1. The user asked for a CSV reader.\n2. Tests pass.")
    assert _sources(text)[0][0] == "summary"


def test_rule_bullets_are_not_a_catalogue() -> None:
    rules = ("When using tools:\n- Always read a file before you edit it\n- Never run destructive commands\n"
             "- Prefer the dedicated tools over raw shell\n")
    assert not looks_like_list(rules)
    assert detect(rules) is None


def test_ordinary_prose_has_no_reading() -> None:
    prose = ("The parser reads each request body once and keeps the blocks it has seen, so a long session costs "
             "no more than its new content. It never raises on bad input.")
    assert detect(prose) is None
    assert detect("Use absolute paths such as /home/user/project/file.py in tool calls.") is None


# --- segments on blocks -------------------------------------------------------------------

def _text_block(text: str, rule: str, source: str = "platform_rules", role: str = "system"):
    from ctxtap.analysis.blocks.drafts import BlockDraft, finalize

    attrs = {"source": source, "authority": "platform", "scope": "global", "lifetime": "client_version",
             "content_type": "instruction"}
    draft = BlockDraft(path="system[0]", kind="instruction_text", role=role, wire={"text": text}, text=text)
    return finalize(draft, 0, attrs, rule)


def test_a_block_with_sections_gets_segments_that_tile_it_and_mixed_attributes() -> None:
    from ctxtap.analysis.blocks.segment_attrs import with_segments

    text = RULES + "\n# Environment\n\nCurrent working directory: /home/dev/rep€\nPlatform: linux\n"
    block = with_segments(_text_block(text, "newclient.system-prompt"))
    assert block.source == "mixed" and block.authority == "platform" and block.content_type == "mixed"
    assert [s.source for s in block.segments] == ["platform_rules", "runtime_environment"]
    assert [s.rule_id for s in block.segments] == ["newclient.system-prompt", "detect.environment-section"]
    data = block.text.encode()
    assert b"".join(data[s.start:s.end] for s in block.segments) == data
    assert block.segments[0].start == 0 and block.segments[-1].end == block.bytes


def test_one_reading_keeps_a_client_rule_but_replaces_a_generic_guess() -> None:
    from ctxtap.analysis.blocks.segment_attrs import with_segments

    context = ("<session_context>\nToday's date is Monday, November 30, 2026.\nMy operating system is: linux\n"
               "I'm currently working in the directory: /home/dev/repo\n</session_context>")
    guessed = with_segments(_text_block(context, "generic.first-user-text-task", "user_task", "user"))
    assert guessed.source == "runtime_environment" and guessed.rule_id.startswith("detect.environment")
    assert guessed.segments == []
    known = _text_block(context, "someclient.context-message", "system_reminder", "user")
    assert with_segments(known) is known


def test_plain_text_blocks_are_left_alone() -> None:
    from ctxtap.analysis.blocks.segment_attrs import with_segments

    block = _text_block(RULES, "newclient.system-prompt")
    assert with_segments(block) is block
