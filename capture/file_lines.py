"""Fingerprints of the lines of the workspace's small text files, kept at record time.

A client that quotes AGENTS.md or pastes a repository file "into the chat" sends the file's own
lines; a rule that merely names the file does not. Keeping a short hash of each line of the files
the run could have quoted (the working directory's top two levels, and instruction files in the
home folder's dot-directories such as `~/.claude/CLAUDE.md`) lets the analyzer tell a quoted file
from a mention, on evidence rather than on a guessed marker. Only hashes are kept, in the private
manifest like the other facts; never a line's text.
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

MIN_LINE_CHARS = 12  # shorter lines (`---`, `# Tests`, `}`) are common to any two files
MAX_FILE_BYTES = 64 * 1024
MAX_FILES = 300
MAX_LINES = 20_000
MAX_SECONDS = 2.0
# the conventions clients read project and user instructions from (AGENTS.md and its siblings,
# the editors' rule files)
INSTRUCTION_NAME = re.compile(r"(?i)^(?:[A-Z]+(?:\.local)?\.md|\.[a-z]+rules|copilot-instructions\.md|.*\.mdc)$")
INSTRUCTION_STEMS = frozenset({"agents", "claude", "gemini", "qwen", "kimi", "crush", "conventions", "codex",
                               "copilot-instructions", "opencode", "grok", "warp"})
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", "target"})


def line_hash(line: str) -> str | None:
    """The fingerprint of one line (stripped), or None for a line too short to say anything."""
    text = line.strip()
    if len(text) < MIN_LINE_CHARS:
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def is_instruction_file(path: str) -> bool:
    """A file clients read as project or user instructions (`AGENTS.md`, `CLAUDE.local.md`,
    `.cursorrules`, `.github/copilot-instructions.md`, `.cursor/rules/x.mdc`)."""
    name = path.rsplit("/", 1)[-1]
    stem = name.lower().split(".", 1)[0] if not name.startswith(".") else name[1:].lower().removesuffix("rules")
    return bool(INSTRUCTION_NAME.match(name)) and (stem in INSTRUCTION_STEMS or name.endswith(".mdc")
                                                   or name.startswith("."))


def _candidates(cwd: Path, home: Path | None) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for top in sorted(cwd.iterdir()) if cwd.is_dir() else []:
        if top.is_file():
            out.append((top.name, top))
        elif top.is_dir() and top.name not in SKIP_DIRS and not top.is_symlink():
            try:
                out += [(f"{top.name}/{p.name}", p) for p in sorted(top.iterdir()) if p.is_file()]
            except OSError:
                continue
    if home is not None and home.is_dir() and home != cwd:
        for dot in sorted(home.glob(".*/")):
            try:
                out += [(f"~/{dot.name}/{p.name}", p) for p in sorted(dot.iterdir())
                        if p.is_file() and is_instruction_file(p.name)]
            except OSError:
                continue
    return out


def fingerprint(cwd: Path, home: Path | None = None) -> dict[str, list[str]]:
    """Line fingerprints of the small text files a client could quote: {path: [hash, ...]}, bounded in
    files, bytes, lines and time (a huge workspace is sampled, never walked whole)."""
    started, lines = time.monotonic(), 0
    out: dict[str, list[str]] = {}
    try:
        candidates = _candidates(cwd, home)
    except OSError:
        return out
    for name, path in candidates:
        if len(out) >= MAX_FILES or lines >= MAX_LINES or time.monotonic() - started > MAX_SECONDS:
            break
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        hashes = list(dict.fromkeys(h for h in map(line_hash, text.splitlines()) if h))
        if hashes:
            out[name] = hashes[: MAX_LINES - lines]
            lines += len(out[name])
    return out
