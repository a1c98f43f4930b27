"""Project instructions where a file is quoted, repository files as data (issue 36, item 4).

`ctxtap record` keeps fingerprints of the lines of the files a client could quote; a text whose
lines are a recorded file's lines quotes it, a rule that names the file does not."""

from __future__ import annotations

from pathlib import Path

from ctxtap.analysis.blocks.segments import read_pieces
from ctxtap.analysis.rules.evidence import evidence_kind
from ctxtap.analysis.threads import runfacts
from ctxtap.capture.file_lines import MAX_FILE_BYTES, fingerprint, is_instruction_file

AGENTS = ("# Working on qz-ledger\n\nRun `make check-qz` before every commit and keep it green.\n"
          "Money amounts are integers of cents, never floats or decimals.\n"
          "The ledger module owns every write to the accounts table.\n")
APP = ("def settle_invoice(invoice_id: int) -> None:\n    ledger = open_ledger(invoice_id)\n"
       "    ledger.post(invoice_id, amount_cents=invoice_total(invoice_id))\n")
RULES = "You are Helper, a careful coding agent.\nKeep answers short and cite the files you change.\n"


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / "src").mkdir(parents=True)
    (ws / "node_modules" / "x").mkdir(parents=True)
    (ws / "AGENTS.md").write_text(AGENTS)
    (ws / "src" / "app.py").write_text(APP)
    (ws / "node_modules" / "x" / "index.js").write_text("module.exports = function helperFunction() {}\n")
    (ws / "big.txt").write_text("a long enough line of text\n" * (MAX_FILE_BYTES // 20))
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("Always answer the user in British English spelling.\n"
                                                "Prefer small commits with a clear message each.\n")
    return ws, home


def test_fingerprints_cover_what_a_client_could_quote_and_nothing_else(tmp_path) -> None:
    ws, home = _workspace(tmp_path)
    files = fingerprint(ws, home)
    assert set(files) == {"AGENTS.md", "src/app.py", "~/.claude/CLAUDE.md"}  # no big file, no node_modules
    assert all(len(h) == 16 for hashes in files.values() for h in hashes)
    assert not any("cents" in h for hashes in files.values() for h in hashes)  # hashes, never text
    assert is_instruction_file("AGENTS.md") and is_instruction_file(".cursorrules")
    assert is_instruction_file(".github/copilot-instructions.md") and not is_instruction_file("README.md")


def _read(text: str, files: dict | None) -> list[tuple[str | None, str | None]]:
    with runfacts.using({"files": files} if files is not None else {}):
        return [(p.source, p.rule_id) for p in read_pieces(text)]


def test_a_quoted_instruction_file_is_project_instructions_a_rule_naming_it_is_not(tmp_path) -> None:
    files = fingerprint(*_workspace(tmp_path))
    quoted = RULES + "\nContents of /ws/AGENTS.md (project instructions):\n\n" + AGENTS
    read = _read(quoted, files)
    assert read[0] == (None, None) and ("project_instructions", "detect.recorded-file") in read
    assert evidence_kind("detect.recorded-file") == "recorded-fact"
    named = RULES + "\nProject instructions:\nRead AGENTS.md in the repository root before you start and follow it.\n"
    assert {source for source, _ in _read(named, files)} == {None}
    # without recorded files the marker is all there is: a pattern reading, as before
    assert ("project_instructions", "detect.project-file") in _read(named, None)


def test_a_pasted_repository_file_is_data_with_its_name(tmp_path) -> None:
    files = fingerprint(*_workspace(tmp_path))
    pasted = "I added these files to the chat so you can edit them.\n\nsrc/app.py\n```\n" + APP + "```\n"
    read = _read(pasted, files)
    assert ("runtime_environment", "detect.recorded-file") in read
    with runfacts.using({"files": files}):
        piece = next(p for p in read_pieces(pasted) if p.rule_id == "detect.recorded-file")
    assert piece.evidence == "quotes src/app.py"


def test_a_listing_of_the_recorded_working_directory_is_the_environment() -> None:
    listing = ("Here are summaries of some files present in my git repository.\nDo not propose changes to these "
               "files.\n\n.gitignore\n\nREADME.md\n\nconfig/settings.env.example\n\nsrc/app.py:\n│def main\n")
    entries = {"entries": [".gitignore", "README.md", "config", "src", "data.csv"]}
    with runfacts.using(entries):
        read = [(p.source, p.rule_id) for p in read_pieces(listing)]
    assert read[0] == (None, None) and ("runtime_environment", "detect.recorded-fact") in read
    with runfacts.using({"entries": ["Makefile", "lib", "tests"]}):  # another directory's names: not a listing
        assert {p.source for p in read_pieces(listing)} == {None}
