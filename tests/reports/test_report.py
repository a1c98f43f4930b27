"""HTML reports without a browser: structure, self-containment, escaping, numbers, size bound, CLI.

Browser checks (console, network, DOM, block viewer) are in test_report_browser.py.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxtap.reports.html.blockdata import decode_row, encode_row, json_for_script, utf8_cut, water_level
from ctxtap.reports.html.render import render_report
from tests import corpus
from tests.reports.html_checks import FIVE_MB, assert_self_contained, embedded, structure
from tests.synthetic import (
    HOSTILE,
    SYSTEM_PROMPT,
)

ROOT = Path(__file__).resolve().parents[2]
PROMPT_MARK = SYSTEM_PROMPT.splitlines()[-1]


def render(captures: list[Path], out: Path, **options) -> str:
    render_report(captures, out, **options)
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def demo_html(demo_capture, tmp_path_factory) -> str:
    return render([demo_capture], tmp_path_factory.mktemp("demo-report") / "report.html")


@pytest.fixture(scope="module")
def synth30_html(synth30, tmp_path_factory) -> str:
    return render([synth30], tmp_path_factory.mktemp("s30-report") / "report.html")


# --- pure functions -------------------------------------------------------------------------------


def test_ribbon_rows_round_trip_through_their_encoding() -> None:
    rng = random.Random(3)
    base: list[int] = []
    for _ in range(300):
        kind = rng.random()
        row = list(base)
        if kind < 0.5:  # extension
            start = rng.randrange(1000)
            row += list(range(start, start + rng.randrange(1, 6)))
        elif kind < 0.7 and row:  # one block changed (a per-request hash)
            row[rng.randrange(len(row))] = rng.randrange(5000)
        elif kind < 0.85 and row:  # compaction: most of the history replaced
            row = row[: rng.randrange(len(row))] + [rng.randrange(5000) for _ in range(rng.randrange(4))]
        else:
            row = [rng.randrange(50) for _ in range(rng.randrange(30))]
        ops = encode_row(row, base)
        assert decode_row(ops, base) == row
        base = row
    # An extension of the previous request costs one copy and one range, however long the history.
    history = list(range(10_000))
    assert encode_row(history + [10_000, 10_001], history) == [-1, 10_000, 10_000, 2]


def test_water_level_fits_the_budget_and_cuts_never_split_characters() -> None:
    sizes = [10, 20, 5000, 90_000]
    cap = water_level(sizes, 10_000)
    assert sum(min(s, cap) for s in sizes) <= 10_000 < sum(min(s, cap + 1) for s in sizes) + 2
    assert water_level([1, 2, 3], 100) == 3
    text = "ä" * 10 + "€" * 10
    assert utf8_cut(text, 5) == "ää" and utf8_cut(text, 7, from_end=True) == "€€"


def test_json_for_script_cannot_close_its_element() -> None:
    value = HOSTILE + "<!-- </SCRIPT> \u2029 \ud800"  # and a lone surrogate, as json.loads can produce
    out = json_for_script({"t": value})
    assert "<" not in out and ">" not in out and "&" not in out
    assert json.loads(out)["t"] == value
    out.encode("utf-8")


# --- scripted sessions ------------------------------------------------------------------------------


def test_demo_report_is_well_formed_and_self_contained(demo_html: str) -> None:
    assert_self_contained(demo_html)
    assert demo_html.count("https://") == demo_html.count("https:\\/\\/") == 0 or "src=\"http" not in demo_html


def test_demo_report_shows_the_analyzer_numbers(demo_capture: Path, demo_html: str) -> None:
    from ctxtap.analysis.db import connect

    con = connect([demo_capture])
    n_requests = con.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert f'data-key="requests">{n_requests:,}<' in demo_html
    for client, n in con.execute("SELECT client, n_requests FROM sessions").fetchall():
        assert f'data-client="{client}"' in demo_html
        section = demo_html.split(f'data-client="{client}"', 1)[1]
        assert f'data-key="session-requests">{n:,}<' in section
    reported = con.execute("SELECT sum(input_tokens_reported) FROM requests").fetchone()[0]
    assert f'data-key="input-reported">{reported:,}<' in demo_html
    # Misses and prefix changes in words, side requests and errors apart, the tool loop by name.
    for (explanation,) in con.execute("SELECT DISTINCT miss_explanation FROM prefix WHERE miss_cause = 'prefix_change'").fetchall():
        assert explanation in demo_html
    assert "system[0] changed: a per-request hash" in demo_html
    assert "Side requests" in demo_html and 'class="side-requests"' in demo_html
    assert "rate_limit" in demo_html and "Number of requests has exceeded your rate limit" in demo_html
    assert '<b class="tool-name">Bash</b>' in demo_html
    assert "Comparison across clients" in demo_html  # four clients in one capture
    data = embedded(demo_html, "ctx-data")
    main_ribbons = [k for k in data["ribbons"] if k.endswith("-main")]
    assert len(main_ribbons) == 4
    n_side = con.execute("SELECT count(*) FROM requests WHERE thread_kind = 'side'").fetchone()[0]
    assert sum(len(data["ribbons"][k]["rows"]) for k in data["ribbons"] if k.endswith("-side")) == n_side


def test_hostile_block_text_renders_as_text(synth30_html: str) -> None:
    assert_self_contained(synth30_html)  # among others: exactly three <script> elements, none from the data
    assert "<script>alert(" not in synth30_html and "<img" not in synth30_html
    # In tables it is escaped markup; in the embedded data, JSON with \u003c; decoded, exactly the original.
    assert "echo &#39;&lt;script&gt;alert(3)&lt;/script&gt;&#39;" in synth30_html
    texts = embedded(synth30_html, "ctx-texts")
    assert HOSTILE in [t[0] for t in texts["texts"]]


def test_each_distinct_text_is_embedded_once_and_long_ones_say_their_size(synth30_html: str) -> None:
    texts = embedded(synth30_html, "ctx-texts")
    assert len(texts["hashes"]) == len(set(texts["hashes"]))
    # The system prompt is resent by every request; it has two versions (a timestamp joins it at one third).
    assert synth30_html.count(PROMPT_MARK) == 2
    [log] = [t for t in texts["texts"] if t[2] == 180_000]
    head, tail, original = log
    assert tail and len(head.encode()) + len(tail.encode()) <= texts["cap"] < original
    assert tail.endswith("wrote artifacts\n")
    assert "are embedded as head and tail only" in synth30_html


def test_a_smaller_budget_truncates_texts_to_fit(synth30: Path, synth30_html: str, tmp_path: Path) -> None:
    texts_size = len(structure(synth30_html).scripts[1]["text"].encode())
    rest = len(synth30_html.encode()) - texts_size
    budget = rest + 60_000 + 20_000  # leaves the texts 60 KB of their ~140 KB
    out = tmp_path / "small.html"
    result = render_report([synth30], out, max_bytes=budget)
    assert result.bytes == out.stat().st_size <= budget
    small, full = embedded(out.read_text(), "ctx-texts"), embedded(synth30_html, "ctx-texts")
    assert small["cap"] < full["cap"] and result.truncated_texts >= 1
    assert all(len(t[0].encode()) + len(t[1].encode()) <= small["cap"] for t in small["texts"])


def test_1000_request_session_stays_within_5_mb(synth1000: Path, tmp_path: Path) -> None:
    out = tmp_path / "big.html"
    result = render_report([synth1000], out)
    assert result.requests > 1000
    assert result.bytes <= FIVE_MB, f"{result.bytes:,} bytes"
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    texts = embedded(html, "ctx-texts")
    assert len(texts["hashes"]) == len(set(texts["hashes"])) == result.texts
    assert html.count(PROMPT_MARK) == 2  # carried by ~1000 requests, two versions, each embedded once
    assert "TTL expired after a 6 min gap" in html


def test_a_capture_without_model_traffic_still_renders(tmp_path: Path, ctxtap_config) -> None:
    from ctxtap.capture.paths import redaction_key
    from ctxtap.ingest.importer import import_files

    har = tmp_path / "empty.har"
    har.write_text('{"log": {"version": "1.2", "entries": []}}')
    import_files([har], tmp_path / "capture", redaction_key())
    html = render([tmp_path / "capture"], tmp_path / "report.html")
    assert_self_contained(html)
    assert "no model traffic" in html and 'data-key="requests">0<' in html


# --- the real corpus ----------------------------------------------------------------------------------


def test_corpus_comparison_report(corpus_captures: list[Path], tmp_path: Path) -> None:
    html = render(corpus_captures, tmp_path / "corpus.html")
    assert_self_contained(html)
    for client in ("claude-code", "codex", "grok-cli", "kimi-code"):
        assert f'data-client="{client}"' in html
    layout = html.split('<table class="layout">', 1)[1].split("</table>", 1)[0]
    assert layout.count("<tr>") == len(corpus.RUNS) + 1
    for location in ("system[0..3]", "input[1..4] (developer)", "messages[0] (system, part)"):
        assert location in layout
    assert "tool_result blocks in user messages" in layout
    assert "system[0] changed: a per-request hash" in html
    # blocks with sections of several sources carry them, for the ribbon's sub-stripes
    data = embedded(html, "ctx-data")
    names = [p["name"] for p in data["palette"]]
    mixed = [k for k, src in enumerate(data["occ"]["src"]) if names[src] == "mixed"]
    assert mixed, "no packed block in the corpus (Kimi's and Grok's system prompts are)"
    for k in mixed:
        sections = data["occ"]["seg"][k]
        assert len(sections) >= 4 and sum(sections[1::2]) == data["occ"]["tok"][k]
        assert {names[i] for i in sections[0::2]} >= {"platform_rules", "runtime_environment"} or \
            len(set(sections[0::2])) >= 2


# --- command line ---------------------------------------------------------------------------------


def test_cli_writes_next_to_one_capture_and_to_the_cwd_for_several(demo_capture: Path, synth30: Path,
                                                                    tmp_path: Path, monkeypatch) -> None:
    from ctxtap.cli.main import main

    runner = CliRunner()
    result = runner.invoke(main, ["report", str(demo_capture)])
    assert result.exit_code == 0, result.output
    assert (demo_capture / "report.html").is_file() and str(demo_capture / "report.html") in result.output
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["report", str(demo_capture), str(synth30), "--title", "<b>two</b>"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "ctxtap-comparison.html").read_text()
    assert "<title>&lt;b&gt;two&lt;/b&gt;</title>" in html
    result = runner.invoke(main, ["report", str(tmp_path)])
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_reports_never_import_proxy_code() -> None:
    for path in (ROOT / "reports").rglob("*.py"):
        source = path.read_text()
        assert not re.search(r"^\s*(from|import)\s+(mitmproxy|proxy_addons)\b", source, re.M), path
    code = ("import sys, ctxtap.cli.report, reports.html.render; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mitmproxy', 'proxy_addons')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
