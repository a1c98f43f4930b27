"""Publish's output follows the unique content, not the resent history.

An agent resends its whole history with every call; an attachment that listed every block of
every request grew with the square of a session's length (46 MB of JSON for a 489-request
capture whose Parquet is 1 MB). A later request lists only blocks that changed and the ranges of
positions carried from the previous request; `full_blocks` rebuilds every request's list.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxtap.analysis.db import connect
from ctxtap.reports.publish.build import full_blocks
from ctxtap.reports.publish.publisher import publish
from tests.democaptures import agent_capture


def test_attachments_are_no_larger_than_the_capture_and_rebuild_every_request(ctxtap_config, tmp_path: Path) -> None:
    capture = agent_capture(tmp_path / "agent", ctxtap_config, "claude", turns=8)
    out = tmp_path / "published"
    publish(capture, out)
    parquet = sum(p.stat().st_size for p in capture.glob("*.parquet"))
    markdown = sum(p.stat().st_size for p in out.glob("*.md"))
    total = sum(p.stat().st_size for p in out.iterdir())
    assert total <= parquet + markdown, (total, parquet, markdown)

    con = connect([capture])
    expected = {}
    for request_id, path, kind in con.execute("SELECT request_id, path, kind FROM blocks ORDER BY position").fetchall():
        expected.setdefault(request_id, []).append((path, kind))
    n_requests = con.execute("SELECT count(*) FROM requests").fetchone()[0]
    got = []
    carried = 0
    for att in (json.loads(p.read_text()) for p in out.glob("*.json")):
        for thread in att["threads"] + att["side_requests"]:
            for request, blocks in zip(thread["requests"], full_blocks(thread, att["block_fields"]), strict=True):
                assert [b["position"] for b in blocks] == list(range(request["n_blocks"]))
                assert all(b["content"] in att["contents"] for b in blocks)
                carried += sum(last - first + 1 for first, last in request["carried"])
                got.append(tuple((b["path"], b["kind"]) for b in blocks))
    assert len(got) == n_requests and carried > 0
    assert sorted(got) == sorted(tuple(v) for v in expected.values() if v) + [()] * (len(got) - len(
        [v for v in expected.values() if v]))
