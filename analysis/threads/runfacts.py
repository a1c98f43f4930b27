"""The recorded machine's facts (the capture manifest's `environment`) while a capture is read.

`ctxtap record` keeps the working directory, user and host names, OS, shell, date and git facts
(`ctxtap.capture.environment`). A line that states one of them as a value (`Workspace:
/home/alice/shop`, `<branch>main</branch>`) is the client's environment whatever its key is called,
so the segment reader can label it on evidence the recorder holds rather than on a guessed keyword.
A fact inside a path (`/home/alice/shop/src/app.py`) or in a sentence of rules is not such a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ctxtap.capture.classify import program_of
from ctxtap.capture.file_lines import is_instruction_file, line_hash

Facts = tuple[tuple[str, str], ...]  # (fact name, value), e.g. ("cwd", "/home/alice/shop")

_FACTS: ContextVar[Facts] = ContextVar("ctxtap_run_facts", default=())
_TASKS: ContextVar[tuple[str, ...]] = ContextVar("ctxtap_run_tasks", default=())
_PROGRAM: ContextVar[str | None] = ContextVar("ctxtap_run_program", default=None)
# line fingerprint -> (file path, is an instruction file); None: no files were recorded
_FILES: ContextVar[dict[str, tuple[str, bool]] | None] = ContextVar("ctxtap_run_files", default=None)
_ENTRIES: ContextVar[frozenset[str]] = ContextVar("ctxtap_run_entries", default=frozenset())
MIN_LISTED = 3  # a listing names three of the working directory's entries at least
FACT_NAMES = ("cwd", "home", "user", "host", "os", "kernel", "shell", "date", "git_branch", "git_head",
              "git_remote", "shell_prompt")
TASK_MIN_CHARS = 12  # `-m "fix it"` is too short to find honestly; a task sentence is not
TASK_MIN_WORDS = 3
MIN_VALUE_CHARS = 3  # a one- or two-letter user name says nothing on its own
MAX_LINES = 40  # a unit of value lines longer than this is a listing, not the client's environment block
_KEY_VALUE = re.compile(r"^\s*(?:[-*•]\s+)?\**(?P<key>[A-Za-z][\w .()/'-]{0,40}?)\**\s*(?::|=|\bis\b)\s*"
                        r"(?P<value>\S.*?)\s*\.?\s*$")
_TAG_VALUE = re.compile(r"^\s*<(?P<key>[\w-]{1,40})>\s*(?P<value>[^<]+?)\s*</(?P=key)>\s*$")


def facts_of(environment: dict[str, Any] | None) -> Facts:
    """The facts worth looking for, from a manifest's `environment`."""
    env = environment or {}
    out = []
    for name in FACT_NAMES:
        value = env.get(name)
        if isinstance(value, str) and len(value.strip()) >= MIN_VALUE_CHARS:
            out.append((name, value.strip()))
    return tuple(out)


def tasks_of(environment: dict[str, Any] | None, command: list[str] | None = None) -> tuple[str, ...]:
    """The task prompts a run was given: `import --prompt`, and the recorded command line's arguments
    that read as a sentence (`claude -p "list the files here"`, `--message=...`), longest first.

    A flag, a path or a word or two is no task; a prompt given on stdin or typed into a UI is not
    known, and the reader falls back to where the text sits."""
    found: list[str] = []
    given = (environment or {}).get("prompt")
    if isinstance(given, str):
        found.append(given)
    for arg in (command or [])[1:]:
        if arg.startswith("-") and "=" in arg:
            arg = arg.split("=", 1)[1]
        found.append(arg)
    out = {t.strip() for t in found if isinstance(t, str) and _sentence(t.strip())}
    return tuple(sorted(out, key=len, reverse=True))


def _sentence(text: str) -> bool:
    return (len(text) >= TASK_MIN_CHARS and len(text.split()) >= TASK_MIN_WORDS and not text.startswith("-")
            and "[REDACTED:" not in text)


@contextmanager
def using(environment: dict[str, Any] | None, command: list[str] | None = None) -> Iterator[Facts]:
    """Read a capture with its recorded facts and task prompts in force (the segment reader and the
    attribution rules ask `current()` and `tasks()`)."""
    token = _FACTS.set(facts_of(environment))
    task_token = _TASKS.set(tasks_of(environment, command))
    program_token = _PROGRAM.set(program_of(command))
    files_token = _FILES.set(files_of(environment))
    entries = (environment or {}).get("entries")
    entries_token = _ENTRIES.set(frozenset(e for e in entries if isinstance(e, str)) if isinstance(entries, list)
                                 else frozenset())
    try:
        yield _FACTS.get()
    finally:
        _FACTS.reset(token)
        _TASKS.reset(task_token)
        _PROGRAM.reset(program_token)
        _FILES.reset(files_token)
        _ENTRIES.reset(entries_token)


_LISTED = re.compile(r"^[\s│├└─|`*-]*\.?/?([^\s/`]+)")


def has_entries() -> bool:
    """Whether the working directory's entries were recorded."""
    return bool(_ENTRIES.get())


def names_entry(line: str) -> bool:
    """The line starts with one of the recorded working directory's top-level entries (or a path under one)."""
    m = _LISTED.match(line)
    return m is not None and m.group(1).rstrip(":") in _ENTRIES.get()


def lists_entries(text: str) -> bool:
    """A listing of the recorded working directory: most lines name one of its top-level entries (or a
    path under one), three at least (`ls` output, a repository map, a tree)."""
    entries = _ENTRIES.get()
    if not entries:
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    named = sum(1 for ln in lines if (m := _LISTED.match(ln)) and m.group(1).rstrip(":") in entries)
    return named >= MIN_LISTED and named * 2 >= len(lines)


def files_of(environment: dict[str, Any] | None) -> dict[str, tuple[str, bool]] | None:
    """{line fingerprint: (file, is an instruction file)} of the recorded workspace, or None when the
    capture kept no file fingerprints (an import, or a capture recorded before they were kept)."""
    files = (environment or {}).get("files")
    if not isinstance(files, dict):
        return None
    out: dict[str, tuple[str, bool]] = {}
    for path, hashes in files.items():
        instruction = is_instruction_file(path)
        for h in hashes if isinstance(hashes, list) else []:
            if h not in out or instruction:
                out[h] = (path, instruction)
    return out


def recorded_files() -> dict[str, tuple[str, bool]] | None:
    return _FILES.get()


MIN_QUOTED_LINES = 2
QUOTED_SHARE = 0.6


def quoted_file(text: str) -> tuple[str, bool] | None:
    """(file, is an instruction file) when most of the text's lines are lines of one recorded file
    (two at least): the client quoted or attached it. None otherwise, or when no files were kept."""
    files = _FILES.get()
    if not files:
        return None
    hashes = [h for h in map(line_hash, text.splitlines()) if h]
    hits = [files[h] for h in hashes if h in files]
    if len(hits) < MIN_QUOTED_LINES or len(hits) < QUOTED_SHARE * len(hashes):
        return None
    counts: dict[tuple[str, bool], int] = {}
    for hit in hits:
        counts[hit] = counts.get(hit, 0) + 1
    return max(counts, key=counts.__getitem__)


def current() -> Facts:
    return _FACTS.get()


def program() -> str | None:
    """The program the recorded command ran, while a capture is read (None: not recorded)."""
    return _PROGRAM.get()


def tasks() -> tuple[str, ...]:
    return _TASKS.get()


def find_task(text: str, known: tuple[str, ...] | None = None) -> tuple[int, int] | None:
    """Where a known task prompt sits in `text` (character offsets), or None: the prompt as given,
    or with its whitespace as the client reflowed it."""
    for task in tasks() if known is None else known:
        at = text.find(task)
        if at >= 0:
            return at, at + len(task)
        words = task.split()
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
        m = pattern.search(text)
        if m is not None:
            return m.start(), m.end()
    return None


def _clean(value: str) -> str:
    return value.strip().strip("`'\"").rstrip("/") or value.strip()


def _matches(name: str, fact: str, value: str) -> bool:
    """The value is the fact itself (a path compared without its trailing slash, names without case)."""
    value = _clean(value)
    if name in ("cwd", "home", "git_remote", "shell_prompt", "shell"):
        return value == fact.rstrip("/") or (name == "shell" and value == fact.rsplit("/", 1)[-1])
    if name in ("user", "host", "os", "kernel", "git_branch"):
        return value.lower() == fact.lower()
    if name == "git_head":
        return len(value) >= 7 and fact.startswith(value.lower())
    return value == fact


def stated_fact(line: str, facts: Facts) -> str | None:
    """The fact a line states as its value (`key: value`, `key = value`, `key is value`,
    `<key>value</key>`), or None."""
    m = _TAG_VALUE.match(line) or _KEY_VALUE.match(line)
    if m is None:
        return None
    for name, fact in facts:
        if _matches(name, fact, m.group("value")):
            return name
    return None


def states_facts(text: str, facts: Facts | None = None) -> str | None:
    """The first recorded fact a unit of value lines states, when every line of it is a value line
    (a list of facts, not prose that happens to name one); None otherwise."""
    facts = current() if facts is None else facts
    if not facts:
        return None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or len(lines) > MAX_LINES:
        return None
    found = None
    for line in lines:
        if not (_TAG_VALUE.match(line) or _KEY_VALUE.match(line)) or len(line) > 200:
            return None
        found = found or stated_fact(line, facts)
    return found
