"""The synthetic session's own checks (its builders are `tests/synthetic.py`)."""

from __future__ import annotations

from tests.synthetic import synthetic_capture


def test_synthetic_session_imports_with_the_expected_shape(tmp_path, ctxtap_config) -> None:
    from ctxtap.analysis.db import connect

    capture = synthetic_capture(tmp_path / "s30", 30)
    con = connect([capture])
    purposes = dict(con.execute("SELECT purpose, count(*) FROM requests GROUP BY 1").fetchall())
    assert purposes.get("main") == 31 and purposes.get("title") == 1  # 30 + the 429
    assert con.execute("SELECT count(*) FROM errors WHERE error_layer = 'rate_limit'").fetchone()[0] == 1
    causes = {c for (c,) in con.execute("SELECT miss_cause FROM prefix WHERE miss_cause IS NOT NULL").fetchall()}
    assert "ttl_expired" in causes
    assert con.execute("SELECT count(*) FROM blocks WHERE source = 'tool_result'").fetchone()[0] > 30
