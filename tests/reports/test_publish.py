"""`ctxtap publish`: recall on a planted corpus, false positives on clean text, fail-closed, options.

The recall figures are measured on what publish writes *before* its final scan
(so they measure the redaction, not the gate), then the same captures must
also pass the gate. Run with `-s` to see the printed figures:

    .venv/bin/python -m pytest -q -s tests/reports/test_publish.py -k "recall or false_positive"
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtap.redaction import Redactor
from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii import PiiRedactor
from ctxtap.redaction.publish_scan import DETECT_SECRETS_PLUGINS, scan_detect_secrets, scan_tree
from ctxtap.reports.publish import publisher as publish_mod
from ctxtap.reports.publish import render as publish_render
from ctxtap.reports.publish.publisher import PublishError, PublishOptions, prepare, publish, write_all
from tests.pii_corpus import (
    PLACEMENTS,
    build_har,
    generate_people,
    leaked,
    oracle_finds_personal,
    oracle_says_personal,
    pii_items,
    plan,
)
from tests.proxyharness import run_ctxtap
from tests.secret_corpus import generate_secrets, negative_corpus, secret_kinds

SEEDS = (11, 12)
PROTOCOLS = ("messages", "chat")


@pytest.fixture(scope="module")
def corpus(ctxtap_config, tmp_path_factory) -> list[tuple[Path, list]]:
    """Captures imported (`ctxtap import`) from HAR files carrying every planted value in every placement."""
    root = tmp_path_factory.mktemp("pii-corpus")
    out = []
    for seed in SEEDS:
        person = generate_people(seed, 2)[seed % 2]
        planned = plan(person, pii_items(person, seed), generate_secrets(seed))
        for protocol in PROTOCOLS:
            har = build_har(person, planned, protocol, root / f"{protocol}-{seed}.har")
            capture = root / f"{protocol}-{seed}"
            run_ctxtap(["import", str(har), "--out", str(capture)], ctxtap_config)
            out.append((capture, planned))
    return out


def _published_text(directory: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(directory.iterdir()))


def test_corpus_has_enough_formats_and_every_placement() -> None:
    assert len(secret_kinds()) >= 20
    person = generate_people(1)[0]
    planned = plan(person, pii_items(person, 1), generate_secrets(1))
    assert {p.placement for p, _ in planned} == set(PLACEMENTS)
    for what in ("pii", "secret"):
        assert {p.placement for p, _ in planned if p.what == what} == set(PLACEMENTS)


def test_recall_on_planted_corpus(corpus, tmp_path) -> None:
    totals: dict[str, list[int]] = {"pii": [0, 0], "secret": [0, 0]}
    by_placement: collections.Counter[tuple[str, str]] = collections.Counter()
    missed: list[str] = []
    kinds: dict[str, set[str]] = {"pii": set(), "secret": set()}
    for capture, planned in corpus:
        out = tmp_path / capture.name
        out.mkdir()
        write_all(prepare(capture), out)
        text = _published_text(out)
        for plant, _carrier in planned:
            assert plant.marker in text, f"placement not published: {plant.placement} ({plant.kind})"
            totals[plant.what][1] += 1
            kinds[plant.what].add(plant.kind)
            if leaked(plant, text):
                totals[plant.what][0] += 1
                by_placement[(plant.what, plant.placement)] += 1
                missed.append(f"{capture.name}: {plant.what} {plant.kind} in {plant.placement}")
    for what, (leaks, n) in totals.items():
        recall = 1 - leaks / n
        print(f"\nrecall[{what}] = {recall:.4f} ({n - leaks}/{n} planted values gone; "
              f"{len(kinds[what])} kinds, {len(PLACEMENTS)} placements, {len(corpus)} captures)")
        assert recall >= 0.99, "\n".join(missed)
    assert len(kinds["secret"]) >= 20
    print("missed:", "\n".join(missed) or "none")


def test_corpus_passes_the_gate(corpus, tmp_path) -> None:
    for capture, _ in corpus:
        result = publish(capture, tmp_path / capture.name)
        assert result.files and all(f.exists() for f in result.files)
        manifest = json.loads(next(f for f in result.files if f.suffix == ".json").read_text())["redaction"]
        assert manifest["by_class"]["email"] >= 1 and manifest["placeholders_present"]["credential"]


# --- false positives -------------------------------------------------------------------------------


def _clean_doc(name: str, text: str) -> tuple[str, list[tuple[str, str, str]], int]:
    """The publish cleaning of one document; returns the text, PII replacements and credential count."""
    identity = Identity()
    identity.learn_text(text)
    identity.refresh_accounts()
    cred = Redactor(b"\x04" * 32, "negative")
    pii = PiiRedactor(numbered=True, identity=identity)
    replaced: list[tuple[str, str, str]] = []
    original = pii.pseudonym

    def spy(kind: str, value: str, rule: str = "context") -> str:
        replaced.append((kind, rule, value))
        return original(kind, value, rule)

    pii.pseudonym = spy  # type: ignore[method-assign]
    out = pii.redact_text(cred.redact_text(text))
    return out, replaced, sum(cred.counts.values())


def test_false_positives_on_negative_corpus(tmp_path) -> None:
    docs = negative_corpus()
    false_docs: dict[str, list[str]] = {}
    changed = 0
    clean_docs, clean_changed = 0, 0
    for i, (name, data) in enumerate(docs):
        text = data.decode("utf-8", "replace")
        out, replaced, creds = _clean_doc(name, text)
        changed += out != text
        wrong = [f"{k}/{r}" for k, r, v in replaced if not oracle_says_personal(k, r, v, text)]
        if creds:
            wrong.append(f"credential x{creds}")
        if wrong:
            false_docs[name] = wrong
        if not oracle_finds_personal(text):
            clean_docs += 1
            clean_changed += out != text
        # what publish would write for this document, for the final scan
        (tmp_path / f"doc{i:03d}.json").write_text(json.dumps({"name": name, "text": out}, indent=2) + "\n")
        (tmp_path / f"doc{i:03d}.md").write_text(publish_render.fence(out) + "\n")
    findings = scan_tree(tmp_path, Identity())
    for finding in findings:
        index = int(finding.file[3:6])
        false_docs.setdefault(docs[index][0], []).append(f"scan {finding.detector}:{finding.kind}")
    rate = len(false_docs) / len(docs)
    strict = clean_changed / clean_docs
    print(f"\nfalse positives: {len(false_docs)}/{len(docs)} files = {rate:.2%} "
          f"(a replacement that is not personal data per stdlib parsers, any credential replacement, or any "
          f"final-scan finding); files changed at all: {changed}/{len(docs)} (genuine e-mail addresses, UUIDs, "
          f"IPs, temp paths and author names in stdlib sources)")
    print(f"strictly clean files (no personal data per the stdlib judge) changed: {clean_changed}/{clean_docs} "
          f"= {strict:.2%}")
    for name, why in sorted(false_docs.items()):
        print(f"  {name}: {', '.join(sorted(set(why)))}")
    assert rate <= 0.01
    assert strict <= 0.01


def test_negative_corpus_publishes_through_the_gate(ctxtap_config, tmp_path) -> None:
    """Ordinary code and prose as tool results: publish must not raise a false alarm."""
    docs = [d for d in negative_corpus(stdlib_files=60)]
    entries = []
    for start in range(0, len(docs), 20):
        chunk = docs[start : start + 20]
        messages = [{"role": "user", "content": "Read these files."}]
        for j, (name, data) in enumerate(chunk):
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{start + j:02d}", "name": "Read", "input": {"file_path": name}}]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{start + j:02d}",
                 "content": data.decode("utf-8", "replace")}]})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages,
                "system": [{"type": "text", "text": "You are a coding agent."}]}
        entries.append({
            "startedDateTime": f"2026-11-29T10:00:{start // 20:02d}Z", "time": 100,
            "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                        "headers": [{"name": "User-Agent", "value": "claude-cli/2.1.0 (external, cli)"},
                                    {"name": "Content-Type", "value": "application/json"}],
                        "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
            "response": {"status": 200, "headers": [{"name": "content-type", "value": "application/json"}],
                         "content": {"text": json.dumps({"type": "message", "content": [], "usage": {
                             "input_tokens": 10, "output_tokens": 1}})}},
        })
    har = tmp_path / "negative.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    capture = tmp_path / "negative"
    run_ctxtap(["import", str(har), "--out", str(capture)], ctxtap_config)
    result = publish(capture, tmp_path / "out")
    assert len(result.files) == 2


# --- fail closed ---------------------------------------------------------------------------------


def _no_leftovers(parent: Path, out: Path) -> None:
    assert not out.exists()
    assert not [p for p in parent.iterdir() if p.name.startswith(".ctxtap-publish-")]


def test_skipped_kind_fails_closed_naming_file_and_line(corpus, tmp_path) -> None:
    capture, _ = corpus[0]
    out = tmp_path / "out"
    with pytest.raises(PublishError) as info:
        publish(capture, out, PublishOptions(skip_pii_kinds=frozenset({"email"})))
    findings = info.value.findings
    assert findings and all(f.line > 0 and f.file.endswith((".json", ".md")) for f in findings)
    assert {f.detector for f in findings} == {"pii"} and {f.kind for f in findings} == {"email/email"}
    assert "@" not in str(info.value)  # the report names places, never values
    _no_leftovers(tmp_path, out)


def test_corrupted_output_fails_closed(corpus, tmp_path, monkeypatch) -> None:
    capture, _ = corpus[0]
    token = "ghp_" + "Zq8Lm2Nx4Rt6Vb1Cd3Ef5Gh7Jk9Pw0Ys2Ua4"
    original = publish_render.render_markdown

    def tampered(att):
        return original(att) + f"\nleaked: export GITHUB_TOKEN={token}\nAWS key AKIAIOSFODNN7EXAMPLQ\n"

    monkeypatch.setattr(publish_render, "render_markdown", tampered)
    out = tmp_path / "out"
    with pytest.raises(PublishError) as info:
        publish(capture, out)
    detectors = {f.detector for f in info.value.findings}
    assert {"credentials", "detect-secrets"} <= detectors
    assert all(f.file.endswith(".md") and f.line > 1 for f in info.value.findings)
    assert token not in str(info.value)
    _no_leftovers(tmp_path, out)


def test_cli_exits_nonzero_and_names_the_place(corpus, tmp_path, monkeypatch) -> None:
    from ctxtap.cli.main import main

    capture, _ = corpus[0]
    original = publish_render.render_markdown
    monkeypatch.setattr(publish_render, "render_markdown",
                        lambda att: original(att) + "\nreach me at bob.smith@corp-mail.example\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["publish", str(capture), "-o", str(out)])
    assert result.exit_code != 0
    assert ".md:" in result.output and "pii: email/email" in result.output
    _no_leftovers(tmp_path, out)


def test_detect_secrets_is_independent_and_in_process(tmp_path) -> None:
    (tmp_path / "x.md").write_text("ok\naws_access_key_id = AKIAIOSFODNN7EXAMPLQ\n-----BEGIN RSA PRIVATE KEY-----\n")
    findings = scan_detect_secrets([tmp_path / "x.md"], tmp_path)
    assert {f.line for f in findings} >= {2, 3}
    assert len(DETECT_SECRETS_PLUGINS) >= 20


def test_existing_output_is_kept_unless_forced(corpus, tmp_path) -> None:
    capture, _ = corpus[0]
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(PublishError, match="not empty"):
        publish(capture, out)
    assert (out / "keep.txt").exists()
    publish(capture, out, PublishOptions(force=True))
    assert not (out / "keep.txt").exists() and any(out.glob("*.json"))


# --- content and options -------------------------------------------------------------------------


def test_placeholders_agree_across_files_of_one_run(corpus, tmp_path) -> None:
    capture, _ = corpus[0]
    files = publish(capture, tmp_path / "out").files
    md = next(f for f in files if f.suffix == ".md").read_text()
    data = json.loads(next(f for f in files if f.suffix == ".json").read_text())
    for placeholder in ("<email-1>", "<user-1>", "<host-1>", "<path-home-1>"):
        assert placeholder in md and placeholder in json.dumps(data, ensure_ascii=False)


def test_options_elide_structure_and_schemas(corpus, tmp_path) -> None:
    capture, _ = corpus[1]  # chat completions: arguments are JSON inside JSON
    full = json.loads(json.dumps(prepare(capture).attachments[0][1]))
    elided = prepare(capture, PublishOptions(elide_tool_results=True)).attachments[0][1]
    shaped = prepare(capture, PublishOptions(structure_only=True)).attachments[0][1]
    schemas = prepare(capture, PublishOptions(schemas=True)).attachments[0][1]

    def contents(att, kind):
        return [c for c in att["contents"].values() if c["kind"] == kind]

    assert all("text" in c["result"] for c in contents(full, "tool_result"))
    assert all("elided" in c["result"] and "text" not in c["result"] for c in contents(elided, "tool_result"))
    assert all(isinstance(c["call"]["arguments"], dict) for c in contents(full, "tool_call"))
    assert all(c["call"]["arguments"]["command"].startswith("(string: ") for c in contents(shaped, "tool_call"))
    assert all("schema_omitted" in c["tool"] for c in contents(full, "tool_definition"))
    assert all("schema" in c["tool"] for c in contents(schemas, "tool_definition"))


def test_fence_survives_backticks() -> None:
    text = "before\n````\ninside\n````\nafter"
    fenced = publish_render.fence(text)
    assert fenced.startswith("`````text\n") and fenced.endswith("\n`````") and text in fenced


def test_publish_command_is_registered() -> None:
    from ctxtap.cli.main import main

    result = CliRunner().invoke(main, ["publish", "--help"])
    assert result.exit_code == 0
    for option in ("--client", "--out", "--elide-tool-results", "--structure-only", "--schemas"):
        assert option in result.output


def test_unknown_client_is_an_error(corpus, tmp_path) -> None:
    capture, _ = corpus[0]
    with pytest.raises(PublishError, match="no requests from nosuch"):
        publish(capture, tmp_path / "o", PublishOptions(clients=("nosuch",)))


def test_module_exports() -> None:
    assert publish_mod.COVERAGE and os.path.isfile(publish_render.TEMPLATES / "attachment.md.j2")


def test_odd_text_survives_rendering(ctxtap_config, tmp_path) -> None:
    """Lone surrogates, backtick runs and huge blobs in a tool result: published, not crashed."""
    blob = "QUJD" * 400
    result_text = "bad \ud800 char, ```` fences ````, home /home/zed9q/x, blob " + blob
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                                   "input": {"command": "cat notes"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                              "content": result_text}]}]}
    entry = {"startedDateTime": "2026-11-29T10:00:00Z", "time": 100,
             "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                         "headers": [{"name": "Content-Type", "value": "application/json"}],
                         "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
             "response": {"status": 200, "headers": [], "content": {"text": "{}"}}}
    har = tmp_path / "odd.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))
    run_ctxtap(["import", str(har), "--out", str(tmp_path / "cap")], ctxtap_config)
    result = publish(tmp_path / "cap", tmp_path / "out")
    md = next(f for f in result.files if f.suffix == ".md").read_text(encoding="utf-8")
    assert "zed9q" not in md and "<path-home-1>/x" in md
    assert "(opaque: 1600 bytes)" in md and blob not in md
    assert "`````text" in md  # the fence outgrew the backtick runs inside
