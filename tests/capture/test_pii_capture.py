"""`--redact pii` at capture time: the layered redactor inside the real capture writer.

The writer reads the mode from the capture's manifest (`ctxtap record/proxy/import
--redact pii`); these tests import a planted HAR that way and check what is stored.
"""

from __future__ import annotations

import json
import re

import pytest

from ctxtap.capture.store import Capture
from ctxtap.redaction.layered import REDACT_MODES, LayeredRedactor, capture_redactor, ruleset_version
from ctxtap.redaction.personal.pii_rules import KEYED_RE
from ctxtap.reports.publish.publisher import publish
from tests.pii_corpus import build_har, escaped_forms, generate_people, pii_items, plan
from tests.proxyharness import all_stored_bytes, run_ctxtap

KEY = b"\x05" * 32


def test_capture_redactor_modes() -> None:
    assert type(capture_redactor(KEY, "c")).__name__ == "Redactor"
    assert isinstance(capture_redactor(KEY, "c", ["pii"]), LayeredRedactor)
    with pytest.raises(ValueError, match="unknown --redact"):
        capture_redactor(KEY, "c", ["everything"])
    assert ruleset_version(["pii"]).count("+") == 1 and REDACT_MODES == ("pii",)


def test_layered_redactor_does_both_and_counts_both() -> None:
    red = LayeredRedactor(KEY, "c")
    body = json.dumps({"content": "export GITHUB_TOKEN=ghp_" + "a1B2" * 9 + "\ncd /home/alice && whoami"}).encode()
    out = red.redact_bytes(body)
    assert b"[REDACTED:github-token:" in out and b"<path-home-" in out and b"ghp_" not in out
    assert red.counts["github-token"] == 1 and red.counts["pii:path-home"] == 1
    headers = red.redact_headers([("X-Msh-Device-Name", "alice-laptop"), ("Authorization", "Bearer sk-" + "x" * 48)])
    assert headers[0][1].startswith("<host-") and headers[1][1].startswith("Bearer [REDACTED:")
    assert red.redact_url("https://h/x?email=alice%40example.com").count("<email-") == 1


def test_capture_time_pii_end_to_end(ctxtap_config, tmp_path) -> None:
    person = generate_people(21)[0]
    planned = plan(person, pii_items(person, 21), [])
    har = build_har(person, planned, "messages", tmp_path / "x.har")
    capture = tmp_path / "cap"
    run_ctxtap(["import", str(har), "--out", str(capture), "--redact", "pii"], ctxtap_config)
    assert "pii" in Capture.open(capture).manifest.redaction_ruleset
    stored = all_stored_bytes(capture)
    leaks = []
    for plant, _ in planned:
        for form in escaped_forms(plant.value):
            if any(form.lower().encode() in data.lower() for _, data in stored):
                leaks.append(f"{plant.kind} in {plant.placement}")
                break
    recall = 1 - len(leaks) / len(planned)
    print(f"\ncapture-time recall[pii] = {recall:.4f} ({len(planned) - len(leaks)}/{len(planned)})")
    assert recall >= 0.99, leaks
    blob = b"\n".join(data for _, data in stored).decode("utf-8", "replace")
    assert KEYED_RE.search(blob)  # keyed placeholders at capture time
    result = publish(capture, tmp_path / "out")
    published = "\n".join(p.read_text() for p in result.files)
    assert not KEYED_RE.search(published)  # renumbered when published
    assert re.search(r"<user-1>", published) and "<path-home-1>" in published
