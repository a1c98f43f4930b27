"""The live view's server: nothing without the token, no CORS, a strict CSP, paged lists that agree with
the views, hostile captured text rendered as text, and `ctxtap serve`'s failures said in words."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from ctxtap.analysis.db import connect
from ctxtap.reports.live.server import CSP, LiveUI
from ctxtap.reports.live.sources import CaptureSource
from tests.proxyharness import ROOT, ctxtap_env, routes_to, run_ctxtap, start_proxy
from tests.synthetic import HOSTILE

ROUTES = ["/", "/c/0", "/c/0/session?id=x", "/c/0/request?id=x", "/c/0/diff?b=x", "/api/state",
          "/api/c/0/sessions", "/api/c/0/requests?session=x", "/api/c/0/charts?session=x", "/api/c/0/session?id=x", "/static/live.js",
          "/static/report.js", "/no/such/page"]


@pytest.fixture(scope="module")
def ui(synth30) -> Iterator[LiveUI]:
    server = LiveUI([CaptureSource(synth30)])
    server.bind(0)
    server.start_thread()
    yield server
    server.stop()


def get(ui: LiveUI, path: str, *, token: bool = True, host: str | None = None, method: str = "GET",
        headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    con = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=30)
    sent = {"Host": host or f"127.0.0.1:{ui.port}", **(headers or {})}
    if token:
        sent["Cookie"] = f"{ui.cookie}={ui.token}"
    con.request(method, path, headers=sent)
    resp = con.getresponse()
    resp.body = resp.read()  # type: ignore[attr-defined]
    return resp


def test_every_route_refuses_a_request_without_the_token(ui: LiveUI) -> None:
    for path in ROUTES:
        resp = get(ui, path, token=False)
        assert resp.status == 403, path
        assert b"token" in resp.body and b"<" not in resp.body, path
        wrong = get(ui, path + ("&" if "?" in path else "?") + "token=not-the-token", token=False)
        assert wrong.status == 403, path
    assert get(ui, "/api/state", method="POST", token=False).status == 403
    # the right cookie for another Host name (DNS rebinding) is refused as well
    assert get(ui, "/", host=f"evil.example:{ui.port}").status == 403
    assert get(ui, "/").status == 200 and get(ui, "/no/such/page").status == 404


def test_the_token_in_the_url_becomes_a_strict_cookie(ui: LiveUI) -> None:
    resp = get(ui, f"/c/0?token={ui.token}", token=False)
    assert resp.status == 302 and resp.getheader("Location") == "/c/0"  # the token leaves the address bar
    cookie = resp.getheader("Set-Cookie")
    assert cookie.startswith(f"{ui.cookie}={ui.token}") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert get(ui, "/c/0", token=False, headers={"Cookie": cookie.split(";")[0]}).status == 200


def test_headers_no_cors_and_a_csp_that_loads_nothing_from_elsewhere(ui: LiveUI) -> None:
    for path in ("/", "/api/state", "/static/live.js"):
        resp = get(ui, path, headers={"Origin": "https://evil.example"})
        assert resp.status == 200, path
        assert resp.getheader("Content-Security-Policy") == CSP
        assert resp.getheader("Access-Control-Allow-Origin") is None
        assert resp.getheader("X-Content-Type-Options") == "nosniff"
    assert "default-src 'none'" in CSP and "script-src 'self'" in CSP and "unsafe-eval" not in CSP
    assert "'unsafe-inline'" not in CSP.split("script-src", 1)[1].split(";", 1)[0]


def test_paged_lists_agree_with_the_views(ui: LiveUI, synth30: Path) -> None:
    con = connect([synth30])
    (sid, n), = con.execute("SELECT session_id, n_requests FROM sessions").fetchall()
    sessions = json.loads(get(ui, "/api/c/0/sessions?offset=0&limit=10").body)
    assert sessions["total"] == 1 and sessions["rows"][0]["session_id"] == sid
    pages = [json.loads(get(ui, f"/api/c/0/requests?session={quote(sid)}&offset={o}&limit=7").body)
             for o in range(0, n, 7)]
    assert {p["total"] for p in pages} == {n}
    ids = [r["request_id"] for p in pages for r in p["rows"]]
    assert ids == [r for (r,) in con.execute(
        "SELECT request_id FROM requests WHERE session_id = ? ORDER BY seq_in_session", [sid]).fetchall()]
    first = pages[0]["rows"][1]
    est = con.execute("SELECT sum(tokens_estimated) FROM tokens_by_source WHERE request_id = ?",
                      [first["request_id"]]).fetchone()[0]
    assert sum(t for _, t in first["sources"]) == est
    calls = con.execute("SELECT count(*) FROM tool_calls WHERE request_id = ?", [first["request_id"]]).fetchone()[0]
    assert len(first["calls"]) == calls
    # a live page's refresh asks for its session's cards along with the rows: the same as /session
    with_cards = json.loads(get(ui, f"/api/c/0/requests?session={quote(sid)}&offset=7&limit=7&cards=1").body)
    assert with_cards["rows"] == pages[1]["rows"] and with_cards["total"] == n
    assert with_cards["session"] == json.loads(get(ui, f"/api/c/0/session?id={quote(sid)}").body)
    assert "session" not in pages[1]
    assert json.loads(get(ui, "/api/c/0/requests?session=nope&cards=1").body) == \
        {"total": 0, "offset": 0, "rows": [], "session": {}}
    # limits are bounded, junk offsets are read as 0
    assert len(json.loads(get(ui, f"/api/c/0/requests?session={quote(sid)}&limit=100000").body)["rows"]) == n
    assert json.loads(get(ui, "/api/c/0/sessions?offset=junk").body)["offset"] == 0


def test_hostile_captured_text_renders_as_text(ui: LiveUI, synth30: Path) -> None:
    con = connect([synth30])
    rid = con.execute("""
        SELECT b.request_id FROM blocks b JOIN t_block_content c USING (content_hash)
        WHERE c.text LIKE '%<script>alert(1)%' ORDER BY b.request_id LIMIT 1""").fetchone()[0]
    page = get(ui, f"/c/0/request?id={quote(rid)}").body.decode()
    assert "<script>alert(1)" not in page and "onerror=alert" not in page.replace("onerror=alert(2)\\u003e", "")
    assert "\\u003cscript\\u003ealert(1)" in page  # in the block viewer's JSON, where report.js reads it as text
    assert page.count("<script") == page.count("</script>") == 5  # data, texts, palette, report.js, live.js
    # an unknown request, session or capture is a plain 404 naming what is missing
    assert get(ui, "/c/0/request?id=nope").status == 404
    assert get(ui, "/c/9").status == 404
    assert HOSTILE  # the same text the report tests use


def test_the_request_page_and_its_diff(ui: LiveUI, synth30: Path) -> None:
    con = connect([synth30])
    rid, prev = con.execute("SELECT request_id, previous_request_id FROM prefix WHERE prefix_changed "
                            "ORDER BY request_id LIMIT 1").fetchone()
    page = get(ui, f"/c/0/request?id={quote(rid)}").body.decode()
    assert "diff against its predecessor" in page and "Usage: reported vs estimated" in page
    diff = get(ui, f"/c/0/diff?b={quote(rid)}").body.decode()
    assert 'id="first-divergence"' in diff and "(A is B's thread predecessor)" in diff and prev in diff
    # against any other request, given by the start of its id
    other = con.execute("SELECT request_id FROM requests WHERE request_id NOT IN (?, ?) LIMIT 1", [rid, prev]).fetchone()[0]
    assert get(ui, f"/c/0/diff?b={quote(rid)}&a={quote(other[:12])}").status == 200
    assert get(ui, f"/c/0/diff?b={quote(rid)}&a=zzzz").status == 404


# --- ctxtap serve: failures in words ---------------------------------------------------------------


def _serve(args: list[str], config: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ctxtap.cli.main", "serve", *args], env=ctxtap_env(config),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_url(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    """The URL `ctxtap serve` printed, and its stderr up to there."""
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    lines = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        if "live view at " in line:
            return line.split("live view at ", 1)[1].strip(), "".join(lines)
        if not line and proc.poll() is not None:
            break
    raise AssertionError("no URL printed:\n" + "".join(lines))


def test_serve_port_in_use_and_corrupt_analysis_are_said_in_words(synth30: Path, tmp_path: Path, ctxtap_config) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_ctxtap(["serve", str(synth30), "--ui-port", str(port)], ctxtap_config, check=False, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"the UI port {port} is in use" in result.stderr and "--ui-port" in result.stderr

    broken = tmp_path / "broken"
    shutil.copytree(synth30, broken)
    for part in (broken / "analysis" / "requests").rglob("*.parquet"):
        part.write_bytes(b"not parquet at all")
    result = run_ctxtap(["serve", str(broken)], ctxtap_config, check=False, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "analysis dataset" in result.stderr and f"ctxtap analyze --force {broken}" in result.stderr

    result = run_ctxtap(["serve", str(tmp_path)], ctxtap_config, check=False, timeout=60)
    assert result.returncode == 1 and "holds captures, not a capture" in result.stderr and "broken" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_ctxtap(["serve", str(empty)], ctxtap_config, check=False, timeout=60)
    assert result.returncode == 1 and "not a ctxtap capture" in result.stderr and "Traceback" not in result.stderr


def test_serve_analyses_a_capture_without_a_dataset_and_follows_one_being_recorded(
        synth30: Path, tmp_path: Path, ctxtap_config) -> None:
    from ctxtap.demo import run_agent
    from ctxtap.modelserver import ModelServer

    bare = tmp_path / "bare"
    shutil.copytree(synth30, bare, ignore=shutil.ignore_patterns("analysis"))
    recording = tmp_path / "recording"
    with ModelServer() as server:
        proxy = start_proxy(recording, ctxtap_config, routes_to(server.url))
        proc = _serve([str(bare), str(recording)], ctxtap_config)
        try:
            run_agent("claude", proxy=proxy.url, ca_file=proxy.ca_bundle, turns=1)
            url, said = _wait_for_url(proc)
            port = int(url.split(":")[2].split("/")[0])
            token = url.split("token=")[1]
            view = LiveUI([], token=token)
            view.port = port
            deadline = time.monotonic() + 30
            while True:
                state = json.loads(get(view, "/api/state").body)
                live = state["captures"][1]
                if live["version"] and not state["captures"][1]["in_progress"] or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert state["live"] and live["live"] and not state["captures"][0]["live"]
            sessions = json.loads(get(view, "/api/c/1/sessions").body)
            assert sessions["total"] == 1 and sessions["rows"][0]["client"] == "claude-code"
            assert (bare / "analysis" / "_meta.json").exists()  # analysed before serving
        finally:
            proc.terminate()
            proxy.stop()
        _, err = proc.communicate(timeout=30)
    err = said + err
    assert "still being recorded" in err and "following it live" in err and "Traceback" not in err
    assert not any(p.name.startswith("v") for p in recording.iterdir())  # the followed capture is untouched


def test_a_long_sessions_charts_are_binned_like_the_reports(synth1000: Path) -> None:
    from ctxtap.reports.live import queries

    src = CaptureSource(synth1000)
    (sid, n), = src.cursor().execute("SELECT session_id, n_requests FROM sessions").fetchall()
    assert n > queries.MAX_CHART_COLUMNS
    svg = str(queries.session_charts(src, sid))
    assert "(binned: one column per " in svg, svg[:300]
    assert svg.count("<svg") >= 2 and len(svg) < 600_000


def test_state_is_a_long_poll_that_answers_when_something_changed(ui: LiveUI) -> None:
    first = json.loads(get(ui, "/api/state").body)
    assert first["mark"] and first["data_mark"] == f"v{first['version']}"
    ui.long_poll_s = 0.6
    try:
        start = time.monotonic()
        same = json.loads(get(ui, "/api/state?since=" + quote(first["mark"])).body)
        held = time.monotonic() - start
        assert same["mark"] == first["mark"] and held >= 0.55  # nothing changed: held until the timeout
        start = time.monotonic()
        json.loads(get(ui, "/api/state?since=an-older-mark").body)
        assert time.monotonic() - start < 0.5  # the page is behind: answered at once
    finally:
        ui.long_poll_s = 15.0


def test_a_live_source_moves_one_sandboxed_connection_to_each_new_version(synth30: Path, tmp_path: Path) -> None:
    import duckdb

    from ctxtap.analysis.live import LiveAnalysis
    from ctxtap.reports.live.sources import LiveSource

    live = LiveAnalysis(synth30, tmp_path / "work")
    assert live.poll()
    src = LiveSource(live)
    n = src.rows("SELECT count(*) AS n FROM requests")[0]["n"]
    assert n >= 30 and src.state().sessions and sum(src.state().sessions.values()) == n
    con, version = src._con, src.state().version
    live._publish(True, [], False)  # a new version (the same requests)
    assert src.state().version == version + 1
    assert src.rows("SELECT count(*) AS n FROM requests")[0]["n"] == n
    assert src._con is con  # pointed at the new version, not reconnected
    old = tmp_path / "work" / f"v{version}"
    shutil.rmtree(old)  # the old version is gone: every view reads the new one
    assert src.rows("SELECT count(*) AS n FROM tool_calls")[0]["n"] >= 0
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'"):
        with pytest.raises(duckdb.Error):
            src.cursor().execute(sql)
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_serve_stops_at_once_on_a_signal_with_a_long_poll_open(synth30: Path, ctxtap_config, sig: str) -> None:
    import signal
    import threading

    proc = _serve([str(synth30)], ctxtap_config)
    try:
        url, _ = _wait_for_url(proc)
        view = LiveUI([], token=url.split("token=")[1])
        view.port = int(url.split(":")[2].split("/")[0])
        mark = json.loads(get(view, "/api/state").body)["mark"]
        answered: list[BaseException | int] = []

        def long_poll() -> None:  # nothing changes: the server holds it for its whole long-poll time
            try:
                answered.append(get(view, "/api/state?since=" + quote(mark)).status)
            except (OSError, http.client.HTTPException) as exc:
                answered.append(exc)

        poller = threading.Thread(target=long_poll, daemon=True)
        poller.start()
        time.sleep(0.5)
        assert not answered  # still held
        start = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=20)
        took = time.monotonic() - start
    finally:
        proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err and "Exception" not in err, err
    assert took < 8, f"{sig} took {took:.1f} s to stop the server"
    poller.join(5)
    assert answered == [200]  # the held poll was answered, not cut


@pytest.fixture
def bare_ui() -> Iterator[LiveUI]:
    """A live view over no capture: what the token, the redirect and the HTTP layer do needs none."""
    server = LiveUI([])
    server.bind(0)
    server.start_thread()
    yield server
    server.stop()


def _raw(ui: LiveUI, head: str, timeout: float = 5) -> tuple[str, dict[str, str]]:
    """Send one request as written (no client tidying its path) and read the status line and headers."""
    with socket.create_connection(("127.0.0.1", ui.port), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1"))
        data = b""
        while b"\r\n\r\n" not in data:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    status, *lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    return status, {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


@pytest.mark.parametrize("path", ["//evil.example/", "///evil.example/x", "/\\evil.example/", "/\\/evil.example/",
                                  "/\\\\evil.example", "//\\evil.example", "/\t/evil.example/", "/%09/evil.example/"])
def test_the_token_redirect_stays_on_this_origin(bare_ui: LiveUI, path: str) -> None:
    from urllib.parse import urljoin, urlsplit

    status, headers = _raw(bare_ui, f"GET {path}?token={bare_ui.token}&x=1 HTTP/1.1\r\n"
                                    f"Host: 127.0.0.1:{bare_ui.port}\r\n\r\n")
    code = status.split()[1]
    if code == "400":  # newer Tornado refuses a raw tab in the request line: no redirect at all is safe too
        assert "\t" in path and "location" not in headers, (status, headers)
        return
    assert code == "302", status
    location = headers["location"]
    assert location.startswith("/") and location[1:2] not in ("/", "\\") and location.endswith("?x=1"), location
    assert not any(c in location for c in "\t\r\n\\ "), location  # a browser drops tabs: "/\t/x" is "//x"
    assert urlsplit(urljoin(f"http://127.0.0.1:{bare_ui.port}/", location)).netloc == f"127.0.0.1:{bare_ui.port}"


def test_the_token_redirect_keeps_an_ordinary_path(bare_ui: LiveUI) -> None:
    status, headers = _raw(bare_ui, f"GET /c/0/session?token={bare_ui.token}&id=a%20b HTTP/1.1\r\n"
                                    f"Host: 127.0.0.1:{bare_ui.port}\r\n\r\n")
    assert status.split()[1] == "302" and headers["location"] == "/c/0/session?id=a+b", headers


def test_a_request_body_over_the_live_views_limit_is_refused_before_it_is_read(bare_ui: LiveUI) -> None:
    from ctxtap.reports.live.server import MAX_BODY_BYTES

    assert MAX_BODY_BYTES == 64 << 10  # the view only serves GETs; Tornado's default would buffer 100 MB
    for declared in (MAX_BODY_BYTES + 1, 107_374_182_400):
        start = time.monotonic()
        status, _ = _raw(bare_ui, f"POST /api/state HTTP/1.1\r\nHost: 127.0.0.1:{bare_ui.port}\r\n"
                                  f"Content-Length: {declared}\r\n\r\n")
        assert status.split()[1] in ("400", "413") and time.monotonic() - start < 2, status
    status, _ = _raw(bare_ui, f"GET /?token={bare_ui.token} HTTP/1.1\r\nHost: 127.0.0.1:{bare_ui.port}\r\n\r\n")
    assert status.split()[1] == "302"  # and the view goes on
