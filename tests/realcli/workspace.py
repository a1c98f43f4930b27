"""A throwaway HOME and a small fixture git repository, shaped like the corpus's `demo-repo`.

Each CLI gets its own HOME so its config, caches, sessions and telemetry state never
touch the developer's, and so the dummy keys live only in files this test wrote.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

AUTHOR_NAME = "Alice Liddell"
AUTHOR_EMAIL = "alice.liddell@example.com"

FILES: dict[str, str] = {
    "README.md": "# demo-repo\n\nA tiny inventory tool used to test coding agents.\n\nRun `python -m src.app`.\n",
    "pyproject.toml": '[project]\nname = "demo-repo"\nversion = "0.1.0"\nrequires-python = ">=3.10"\n',
    "src/__init__.py": "",
    "src/app.py": (
        '"""Print the total quantity in data.csv."""\n\nimport csv\n\n\n'
        "def total(path: str = \"data.csv\") -> int:\n"
        "    with open(path, newline=\"\") as fh:\n"
        "        return sum(int(row[\"qty\"]) for row in csv.DictReader(fh))\n\n\n"
        "if __name__ == \"__main__\":\n    print(total())\n"
    ),
    "data.csv": "item,qty\napples,3\npears,5\nplums,7\n",
    "docs/usage.md": "# Usage\n\n`python -m src.app` prints the total quantity.\n",
    "config/defaults.toml": '[app]\ndata = "data.csv"\n',
    ".gitignore": "config/settings.env\n__pycache__/\n",
}
# Project instructions, one file per convention, each saying something different so a reader of the
# requests can tell which file landed where (the "instructions" fixture variant only).
INSTRUCTION_FILES: dict[str, str] = {
    "AGENTS.md": "# Agent notes for demo-repo\n\n- Run the app with `python -m src.app`.\n- Keep data.csv sorted by item.\n",
    "CLAUDE.md": "# Claude notes for demo-repo\n\n- Prefer small, reviewable diffs.\n",
    "GEMINI.md": "# Gemini notes for demo-repo\n\n- Explain each shell command before running it.\n",
}
# Git-ignored, credential-like (all synthetic): agents that read it must not leak it into a capture unredacted.
SETTINGS_ENV = "DATABASE_URL=postgres://demo:Tr0ub4dor-synthetic@db.example.com/demo\nDEBUG=0\n"


def _git(repo: Path, *args: str, date: str) -> None:
    """git with a synthetic identity and fixed dates, never reading the developer's git config."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
        "GIT_COMMITTER_NAME": AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_fixture_repo(repo: Path, instructions: bool = False) -> Path:
    """README.md, pyproject.toml, src/app.py, data.csv, docs/, config/ in git: 2 commits and a remote.

    INSTRUCTIONS adds AGENTS.md, CLAUDE.md and GEMINI.md in a third commit.
    """
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main", date="2026-01-05T10:00:00+00:00")
    for rel in ("README.md", "pyproject.toml", "src/__init__.py", "src/app.py", ".gitignore"):
        _write(repo / rel, FILES[rel])
    _git(repo, "add", "-A", date="2026-01-05T10:00:00+00:00")
    _git(repo, "commit", "-q", "-m", "Initial inventory tool", date="2026-01-05T10:00:00+00:00")
    for rel in ("data.csv", "docs/usage.md", "config/defaults.toml"):
        _write(repo / rel, FILES[rel])
    _git(repo, "add", "-A", date="2026-01-06T09:30:00+00:00")
    _git(repo, "commit", "-q", "-m", "Add sample data, docs and config", date="2026-01-06T09:30:00+00:00")
    if instructions:
        for rel, text in INSTRUCTION_FILES.items():
            _write(repo / rel, text)
        _git(repo, "add", "-A", date="2026-01-07T08:15:00+00:00")
        _git(repo, "commit", "-q", "-m", "Add notes for coding agents", date="2026-01-07T08:15:00+00:00")
    _git(repo, "remote", "add", "origin", "https://github.com/alice-liddell/demo-repo.git",
         date="2026-01-06T09:30:00+00:00")
    _write(repo / "config" / "settings.env", SETTINGS_ENV)
    return repo


def make_home(home: Path) -> Path:
    """An empty HOME with the directories CLIs expect (TMPDIR lives inside it)."""
    (home / ".cache" / "tmp").mkdir(parents=True)
    (home / ".config").mkdir()
    return home


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file's bytes outside .git, to prove the CLI did not modify the repository."""
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
