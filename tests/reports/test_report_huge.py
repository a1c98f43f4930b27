"""Reports of huge sessions: 10,000 requests within --max-size, aggregated, with the views' numbers.

The 10,000-request capture is built once per run (`synth10k` in conftest, about a
minute); the browser half is in test_report_browser.py. The aggregation's parts
are checked on small inputs first.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from markupsafe import escape

from ctxtap.reports.html.blockdata import BlockData, Ribbon, RibbonRow, decode_row
from ctxtap.reports.html.budget import Detail, first_detail, head_and_tail, sql_command
from ctxtap.reports.html.render import RenderResult, render_report
from tests.conftest import HUGE_REQUESTS
from tests.reports.html_checks import FIVE_MB, assert_self_contained, embedded

TWO_MB = 2_000_000


# --- the parts --------------------------------------------------------------------------------------


def test_a_plan_keeps_every_request_while_it_can_and_shares_its_limit_by_size() -> None:
    assert first_detail(1000, FIVE_MB).is_full
    plan = first_detail(10_000, FIVE_MB)
    assert not plan.is_full and plan.limit and plan.ribbon_bytes
    assert plan.share(10_000) == plan.limit and plan.share(5_000) == -(-plan.limit // 2)
    assert plan.share(3) == 10  # a section keeps its first and last rows
    assert plan.bin_size(10_000) == -(-10_000 // plan.limit) and plan.bin_size(5) == 1
    smaller = Detail.aggregated(10_000, TWO_MB)
    assert smaller.limit < plan.limit and smaller.ribbon_bytes < plan.ribbon_bytes
    assert Detail.full().share(10_000) is None and Detail.full().bin_size(10_000) == 1
    rows = list(range(10))
    assert head_and_tail(rows, None) == (rows, [], [])
    assert head_and_tail(rows, 4) == ([0, 1], [2, 3, 4, 5, 6, 7], [8, 9])
    assert head_and_tail(rows, 5) == ([0, 1, 2], [3, 4, 5, 6, 7], [8, 9])


def test_sql_commands_survive_a_posix_shell(tmp_path: Path) -> None:
    capture = tmp_path / "it's a \"capture\" $HOME"
    sql = "SELECT * FROM requests WHERE session_id = 'a''b \"c\" $d `e` \\f'"
    command = sql_command(capture, sql)
    assert command.startswith("ctxtap sql ")
    out = subprocess.run(["sh", "-c", "printf '%s\\0' " + command.removeprefix("ctxtap sql ")],
                         capture_output=True, check=True).stdout.decode()
    assert out.split("\0")[:2] == [capture.name, sql]  # the folder's name: a shared report names no local path


def _blocks_with(rows: dict[str, list[int]]) -> BlockData:
    """A BlockData whose requests have these occurrence lists (no capture behind it)."""
    blocks = BlockData()
    n = 1 + max(o for occ in rows.values() for o in occ)
    blocks.cols = {k: [0] * n for k in blocks.cols}
    blocks.cols["tok"] = [10] * n
    blocks.cols["txt"] = list(range(n))
    blocks.request_positions = {("c", rid): occ for rid, occ in rows.items()}
    return blocks


def test_a_ribbon_merges_requests_that_only_appended_and_leaves_out_its_middle() -> None:
    occ = {f"r{i}": list(range(i + 3)) for i in range(8)}  # each request appends one block
    occ["r4"] = [99, *range(1, 7)]  # r4 changed its first block
    blocks = _blocks_with(occ)

    def row(i: int, **kw) -> RibbonRow:
        return RibbonRow(key=f"r{i}", capture_id="c", label=f"#{i + 1} main", thread=kw.pop("thread", "t"),
                         num=i + 1, purpose="main", extends=kw.pop("extends", i > 0), **kw)

    rows = [row(0), row(1), row(2), row(3, marks="E"), row(4, marks="D", extends=False), row(5), row(6),
            row(7, thread="other")]
    ribbon = Ribbon("rib", rows)
    where = blocks.add_ribbon(ribbon, merge=True)
    drawn = blocks._draw["rib"]
    # r0..r2 merge (drawn as r2); r3 failed and r4 changed the prefix: alone; r5 extends r4 but r4 is
    # marked, so r5 starts a row that r6 joins; r7 is another thread.
    assert [d.key for d in drawn] == ["r2", "r3", "r4", "r6", "r7"]
    assert [d.count for d in drawn] == [3, 1, 1, 2, 1]
    assert drawn[0].label == "#1–#3 main ×3"
    assert where == [(0, True), (0, True), (0, True), (1, False), (2, False), (3, True), (3, True), (4, False)]
    assert ribbon.n_rows == 5 and ribbon.n_merged == 3 and ribbon.n_left_out == 0
    # A byte share for about two rows: the first and last rows stay, one row says what is left out.
    ribbon = Ribbon("cut", rows)
    where = blocks.add_ribbon(ribbon, merge=True, max_bytes=1000, gap_command="q {first}..{last}")
    drawn = blocks._draw["cut"]
    gaps = [d for d in drawn if d.gap]
    assert len(gaps) == 1 and drawn[0].key == "r2" and drawn[-1].key == "r7"
    gone = [i for i, (drawn_row, _) in enumerate(where) if drawn_row is None]
    assert gaps[0].count == ribbon.n_left_out == len(gone) > 0
    assert gaps[0].gap == f"q {rows[gone[0]].num}..{rows[gone[-1]].num}"
    assert set(gaps[0].marks) == {m for i in gone for m in rows[i].marks}
    blocks.compact = True
    data = json.loads(blocks.data_json())
    cut = data["ribbons"]["cut"]["rows"]
    assert sum(r.get("gap") or r.get("n") or 1 for r in cut) == len(rows)
    assert all(max(decode_row(r["ops"], []), default=0) < len(data["occ"]["src"]) for r in cut if r["base"] < 0)


# --- 10,000 requests --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def huge_html(huge_report: RenderResult) -> str:
    return huge_report.path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def small_report(synth10k: Path, tmp_path_factory) -> RenderResult:
    return render_report([synth10k], tmp_path_factory.mktemp("huge-2mb") / "report.html", max_bytes=TWO_MB)


def _section(html: str, client: str) -> str:
    return html.split(f'data-client="{client}"', 1)[1].split('<section class="report-section', 1)[0]


def assert_numbers_match_the_views(capture: Path, html: str) -> None:
    from ctxtap.analysis.db import connect

    con = connect([capture])
    n, reported, read = con.execute("SELECT count(*), sum(input_tokens_reported), sum(cache_read_tokens) "
                                    "FROM requests").fetchone()
    assert n > HUGE_REQUESTS
    assert f'data-key="requests">{n:,}<' in html
    assert f'data-key="input-reported">{reported:,}<' in html
    for row in con.execute("SELECT client, n_requests, input_tokens_reported, input_tokens_estimated, "
                           "cache_read_tokens, cache_write_tokens, output_tokens, n_main, n_side FROM sessions"
                           ).fetchall():
        client, count, *totals = row
        section = _section(html, client)
        assert f'data-key="session-requests">{count:,}<' in section
        for value in totals:
            assert f">{value:,}<" in section or f"{value:,} " in section, value
    assert f">{read:,}<" in html  # the session's cache-read card


def _left_out_rows(html: str) -> list[tuple[int, str]]:
    """(count, command) of every table row that stands for rows left out."""
    out = []
    for count, command in re.findall(r'<tr class="left-out"><td colspan="\d+">… ([\d,]+) .*?'
                                     r'<code class="query">(.*?)</code>', html):
        out.append((int(count.replace(",", "")), html_lib.unescape(command)))
    return out


def _run(command: str, capture: Path) -> list:
    """The command's query over the capture it names by folder, run from the folder that holds it."""
    from ctxtap.analysis.db import connect

    args = shlex.split(command)
    assert args[:2] == ["ctxtap", "sql"] and args[2] == capture.name, args
    return connect([capture.parent / args[2]]).execute(args[3]).fetchall()


def test_10000_requests_render_within_the_default_bound(huge_report: RenderResult, huge_html: str,
                                                         synth10k: Path) -> None:
    assert huge_report.aggregated and huge_report.requests > HUGE_REQUESTS
    assert huge_report.bytes == huge_report.path.stat().st_size <= FIVE_MB, f"{huge_report.bytes:,} bytes"
    assert_self_contained(huge_html)
    assert_numbers_match_the_views(synth10k, huge_html)
    notes = " ".join(huge_report.notes)
    for said in ("only appended blocks to their predecessor are drawn in the row of the last",
                 "charts draw one column per", "the requests table shows its first", "the tool-call table shows",
                 f"{huge_report.left_out_texts:,} are left out", "tool-loop timeline counts requests and calls"):
        assert said in notes, said
    for note in huge_report.notes:
        assert f'<p class="note">{escape(note)}</p>' in huge_html


def test_every_request_is_drawn_once_merged_or_said_to_be_left_out(huge_html: str, synth10k: Path) -> None:
    from ctxtap.analysis.db import connect

    con = connect([synth10k])
    data = embedded(huge_html, "ctx-data")
    for rid, kind in (("s1-main", "<>"), ("s1-side", "=")):
        rows = data["ribbons"][rid]["rows"]
        (n,) = con.execute(f"SELECT count(*) FROM requests WHERE thread_kind {kind} 'side'").fetchone()
        assert len(rows) < n
        assert sum(r.get("gap") or r.get("n") or 1 for r in rows) == n
        for r in rows:
            if r.get("gap"):  # the query lists exactly the left-out requests' blocks
                first, last = map(int, re.findall(r"#(\d+)", r["l"]))
                listed = _run(r["q"], synth10k)
                assert {row[0] for row in listed} <= set(range(first, last + 1))
                (blocks,) = con.execute(
                    f"SELECT count(*) FROM blocks JOIN requests USING (request_id) WHERE thread_kind {kind} 'side' "
                    "AND seq_in_session + 1 BETWEEN ? AND ?", [first, last]).fetchone()
                assert len(listed) == blocks
    merged = [r for r in data["ribbons"]["s1-main"]["rows"] if r.get("n")]
    assert merged and sum(r["n"] for r in merged) > HUGE_REQUESTS // 2
    # A merged row is drawn as its last request, and each request of it only appended to its predecessor.
    row = max(merged, key=lambda r: r["n"])
    first = int(re.match(r"#(\d+)", row["l"]).group(1))
    kinds = con.execute("""SELECT p.divergence_kind FROM requests r JOIN prefix p USING (request_id)
                           WHERE r.thread_kind <> 'side' AND r.seq_in_session + 1 > ? AND r.seq_in_session <=
                           (SELECT seq_in_session FROM requests WHERE request_id = ?)""", [first, row["id"]]).fetchall()
    assert len(kinds) == row["n"] - 1 and {k for (k,) in kinds} == {"extended"}


def test_long_tables_show_first_and_last_rows_and_the_query_for_the_rest(huge_report: RenderResult,
                                                                         huge_html: str, synth10k: Path,
                                                                         monkeypatch) -> None:
    left_out = _left_out_rows(huge_html)
    assert len(left_out) >= 2  # the requests and tool-call tables at least
    for count, command in left_out:
        assert len(_run(command, synth10k)) == count
    # The CLI runs the command as written, from the folder that holds the capture.
    from ctxtap.cli.main import main

    monkeypatch.chdir(synth10k.parent)
    count, command = left_out[0]
    result = CliRunner().invoke(main, [*shlex.split(command)[1:], "--format", "json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)) == count
    requests = huge_html.split('<table class="requests">', 1)[1].split("</table>", 1)[0]
    shown = len(re.findall(r'<td class="n">#\d+</td>', requests))
    [(gone, command)] = _left_out_rows(requests)
    assert shown + gone == huge_report.requests
    listed = {row[0] for row in _run(command.replace("SELECT *", "SELECT seq_in_session + 1"), synth10k)}
    assert not listed & {int(n) for n in re.findall(r'<td class="n">#(\d+)</td>', requests)}


def ribbon_row_blocks(data: dict, rid: str, i: int) -> list[int]:
    """The embedded occurrences a ribbon row draws, decoded through its base rows."""
    rows = data["ribbons"][rid]["rows"]
    base = ribbon_row_blocks(data, rid, rows[i]["base"]) if rows[i]["base"] >= 0 else []
    return decode_row(rows[i]["ops"], base)


def test_drawn_rows_are_their_requests_blocks_and_left_out_texts_are_counted(
        huge_report: RenderResult, huge_html: str, synth10k: Path) -> None:
    from ctxtap.analysis.db import connect

    con = connect([synth10k])
    data, texts = embedded(huge_html, "ctx-data"), embedded(huge_html, "ctx-texts")
    assert len([t for t in texts["texts"] if t == 0]) == huge_report.left_out_texts > 0
    occ, strings = data["occ"], data["strings"]
    assert len(occ["src"]) < con.execute("SELECT count(*) FROM t_block_occurrences").fetchone()[0]
    rows = data["ribbons"]["s1-main"]["rows"]
    checked = embedded_texts = 0
    for i in [0, 1, 2, len(rows) // 2, len(rows) - 2, len(rows) - 1]:
        if rows[i].get("gap"):
            continue
        expected = con.execute("""SELECT b.path, c.text, c.bytes FROM blocks b JOIN t_block_content c
                                  USING (capture_id, content_hash) WHERE b.request_id = ? ORDER BY b.position""",
                               [rows[i]["id"]]).fetchall()
        drawn = ribbon_row_blocks(data, "s1-main", i)
        assert [strings[occ["path"][o]] for o in drawn] == [path for path, _, _ in expected]
        for o, (_, text, size) in zip(drawn, expected, strict=True):
            assert occ["b"][o] == size
            entry = texts["texts"][occ["txt"][o]]
            if entry != 0:
                embedded_texts += 1
                assert entry[2] == size and (entry[0] == text if not entry[1] else text.startswith(entry[0]))
        checked += 1
    assert checked >= 4 and embedded_texts > 0


def test_a_smaller_bound_aggregates_more(huge_report: RenderResult, small_report: RenderResult,
                                         synth10k: Path) -> None:
    assert small_report.aggregated and small_report.bytes <= TWO_MB, f"{small_report.bytes:,} bytes"
    html = small_report.path.read_text(encoding="utf-8")
    assert_self_contained(html)
    assert_numbers_match_the_views(synth10k, html)
    big, small = embedded(huge_report.path.read_text(), "ctx-data"), embedded(html, "ctx-data")
    assert len(small["ribbons"]["s1-main"]["rows"]) < len(big["ribbons"]["s1-main"]["rows"])
    assert len(small["occ"]["src"]) < len(big["occ"]["src"])
    for count, command in _left_out_rows(html):
        assert len(_run(command, synth10k)) == count
    assert "more than a report of 2.00 MB shows one by one" in " ".join(small_report.notes)
