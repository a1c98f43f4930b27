"""The shared store against a real S3-compatible server (SeaweedFS on 127.0.0.1): push, ls, pull, rm,
queries in place that answer what the same queries over local copies answer, stats and a report
over the store, an interrupted push resumed, an unredacted capture refused, pulled captures private."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ctxtap.cli.main import main
from ctxtap.store import StoreError, push_capture
from ctxtap.store.location import s3_filesystem

# tokens by source per client per day: the cross-capture question the issue asks for
TOKENS_BY_SOURCE = """
    SELECT r.client, strftime(to_timestamp(r.ts_start), '%Y-%m-%d') AS day, t.source,
           sum(t.tokens_estimated) AS tokens, sum(t.bytes) AS bytes
    FROM tokens_by_source t JOIN requests r USING (capture_id, request_id)
    GROUP BY ALL ORDER BY ALL"""


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def rows(*args: str) -> list[dict]:
    return json.loads(run("sql", *args, "--format", "json").stdout)


def capture_id(capture: Path) -> str:
    return json.loads((capture / "manifest.json").read_text())["capture_id"]


def test_push_ls_pull_rm(store, two_captures, tmp_path):
    synth, demo = two_captures
    out = run("push", str(synth), str(demo), store).stdout
    assert out.count("objects uploaded") == 2
    listed = [json.loads(line) for line in run("ls", store, "--json").stdout.splitlines()]
    assert {e["capture_id"] for e in listed} == {capture_id(synth), capture_id(demo)}
    assert {tuple(e["clients"]) for e in listed} == {("claude-code",),
                                                     ("claude-code", "codex", "gemini-cli", "kimi-code")}
    only_codex = [json.loads(line) for line in run("ls", store, "--json", "--client", "codex").stdout.splitlines()]
    assert [e["capture_id"] for e in only_codex] == [capture_id(demo)]
    assert run("ls", store, "--since", "2999-01-01").stdout == ""

    pulled = tmp_path / "pulled"
    # a start of the id names it (the shortest from the seconds on that the other capture does not share:
    # the two captures may be made in the same second)
    demo_id, synth_id = capture_id(demo), capture_id(synth)
    prefix = next(demo_id[:n] for n in range(15, len(demo_id) + 1) if not synth_id.startswith(demo_id[:n]))
    run("pull", store, "--capture", prefix, "-o", str(pulled))
    back = pulled / capture_id(demo)
    # private: every folder 0700, every file 0600
    for path in [back, *back.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    for name in ("flows.parquet", "bodies.parquet"):
        assert (back / name).read_bytes() == (demo / name).read_bytes()
    manifest = json.loads((back / "manifest.json").read_text())
    assert manifest["capture_id"] == capture_id(demo) and "environment" not in manifest
    # the dataset came back current: no re-analysis, and it answers as the original
    from ctxtap.analysis.build import ensure_analysis

    assert ensure_analysis(back)[1] is False
    query = "SELECT client, count(*) AS n, sum(input_tokens) AS t FROM requests GROUP BY 1 ORDER BY 1"
    assert rows(str(back), query) == rows(str(demo), query)

    run("rm", store, "--capture", capture_id(demo))
    assert [json.loads(line)["capture_id"] for line in run("ls", store, "--json").stdout.splitlines()] == \
        [capture_id(synth)]
    assert run("pull", store, "--capture", capture_id(demo), "-o", str(tmp_path / "again"), ok=False).exit_code != 0
    run("rm", store, "--before", "2999-01-01")
    assert run("ls", store, "--json").stdout == ""


def test_queries_in_place_answer_as_local_copies(store, two_captures):
    synth, demo = two_captures
    for capture in two_captures:
        push_capture(capture, store)
    local = rows(str(synth), str(demo), TOKENS_BY_SOURCE)
    assert local and {r["client"] for r in local} >= {"claude-code", "codex"}
    assert rows(store, TOKENS_BY_SOURCE) == local
    # filters select partitions: --client and --capture read only the matching capture
    assert rows(store, TOKENS_BY_SOURCE, "--client", "codex") == rows(str(demo), TOKENS_BY_SOURCE)
    assert rows(store, TOKENS_BY_SOURCE, "--capture", capture_id(synth)) == rows(str(synth), TOKENS_BY_SOURCE)
    assert run("sql", store, "SELECT 1", "--since", "2999-01-01", ok=False).exit_code != 0
    # stats over the store is the stats of the same captures
    over_store = json.loads(run("stats", store, "--json", "--client", "codex").stdout)
    local_stats = json.loads(run("stats", str(demo), "--json").stdout)
    # stats' own queries pick an example among ties (any_value, LIMIT over equal counts): compare the counts
    for key in ("prefix_changes", "cache_misses"):
        assert sorted(r["n"] for r in over_store.pop(key)) == sorted(r["n"] for r in local_stats.pop(key))
    assert over_store == local_stats
    assert over_store["sessions"]


def test_sql_sandbox_holds_over_a_store(store, two_captures):
    push_capture(two_captures[0], store)
    for query in ("SELECT * FROM read_csv('/etc/passwd')", "COPY (SELECT 1) TO '/tmp/ctxtap-store-escape.csv'",
                  "INSTALL httpfs", "SET enable_external_access = true"):
        result = run("sql", store, query, ok=False)
        assert result.exit_code != 0, query
        assert "Permission" in result.output, result.output
    assert not Path("/tmp/ctxtap-store-escape.csv").exists()


def test_sql_allow_external_over_a_store(store, two_captures, tmp_path):
    """--allow-external lets a store query write a file of its own, as over local captures."""
    push_capture(two_captures[0], store)
    out = tmp_path / "requests.csv"
    run("sql", store, f"COPY (SELECT count(*) AS n FROM requests) TO '{out}'", "--allow-external")
    assert out.read_text().splitlines()[1] == str(rows(str(two_captures[0]), "SELECT count(*) AS n FROM requests")[0]["n"])


def test_report_over_a_store_reads_it_in_place(store, two_captures, tmp_path, monkeypatch):
    """`ctxtap report URL` reads the store's datasets in place (no temporary copy) and shows what the report
    of the same capture read locally shows."""
    import re
    import tempfile

    push_capture(two_captures[1], store)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    out = tmp_path / "team.html"
    result = run("report", store, "--client", "kimi-code", "-o", str(out))
    assert not list(temp.glob("ctxtap-store-*")), "nothing is copied out of the store"
    local = run("report", str(two_captures[1]), "-o", str(tmp_path / "local.html"))
    counts = r"(\d+) sessions, (\d+) requests, (\d+) distinct block texts"
    assert re.search(counts, result.stdout).groups() == re.search(counts, local.stdout).groups(), result.stdout
    html = out.read_text()
    assert "kimi-code" in html and "<html" in html.lower() and capture_id(two_captures[1]) in html


class _FailingAfter:
    """The S3 filesystem, except that uploads fail after `n` objects (a push cut off halfway)."""

    def __init__(self, inner, n: int) -> None:
        self.inner, self.left = inner, n

    def open_output_stream(self, path, *a, **k):
        if self.left <= 0:
            raise OSError("connection reset (test)")
        self.left -= 1
        return self.inner.open_output_stream(path, *a, **k)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_interrupted_push_resumes(store, two_captures):
    capture = two_captures[0]
    with pytest.raises(StoreError, match="Run the same push again"):
        push_capture(capture, store, filesystem=_FailingAfter(s3_filesystem(), 6))
    assert run("ls", store).stdout == ""  # no index yet: readers do not see a half-pushed capture
    resumed = push_capture(capture, store)
    assert resumed.skipped >= 6 and resumed.uploaded >= 1
    total = resumed.skipped + resumed.uploaded
    assert [line.split()[1] for line in run("ls", store).stdout.splitlines()] == [capture_id(capture)]
    again = push_capture(capture, store)
    assert (again.uploaded, again.skipped) == (0, total)
    # an object changed in the store is noticed by its digest and uploaded again
    fs = s3_filesystem()
    path = f"{resumed.url[len('s3://'):]}/manifest.json"
    with fs.open_input_stream(path) as f:
        size = len(f.read())
    with fs.open_output_stream(path) as f:
        f.write(b"x" * size)
    fs.delete_file(f"{store[len('s3://'):]}/index/clients={resumed.client}/day={resumed.day}/"
                   f"capture_id={resumed.capture_id}.json")
    repaired = push_capture(capture, store)
    assert repaired.uploaded == 1


def test_rm_removes_what_an_interrupted_push_left(store, two_captures):
    capture = two_captures[0]
    with pytest.raises(StoreError):
        push_capture(capture, store, filesystem=_FailingAfter(s3_filesystem(), 4))
    root = store[len("s3://"):] + "/captures"
    fs = s3_filesystem()
    selector = __import__("pyarrow.fs").fs.FileSelector(root, recursive=True, allow_not_found=True)
    assert fs.get_file_info(selector), "the interrupted push left objects"
    assert run("ls", store).stdout == ""
    assert "unindexed" in run("rm", store, "--capture", capture_id(capture)).stdout
    assert not [i for i in fs.get_file_info(selector) if i.type.name == "File"]
    assert run("rm", store, "--capture", capture_id(capture), ok=False).exit_code != 0


def test_unredacted_capture_refused(store, two_captures, tmp_path):
    clear = tmp_path / "clear"
    shutil.copytree(two_captures[0], clear, copy_function=shutil.copy2)
    manifest = json.loads((clear / "manifest.json").read_text())
    manifest["redaction_ruleset"] = ""
    (clear / "manifest.json").write_text(json.dumps(manifest))
    result = run("push", str(clear), store, ok=False)
    assert result.exit_code != 0
    assert "does not say it was redacted" in result.output
    assert run("ls", store).stdout == ""
    assert s3_filesystem().get_file_info(store[len("s3://"):] + "/captures").type.name == "NotFound"


def test_versions_read_together(store, two_captures, tmp_path):
    """A capture pushed by another ctxtap version (a column less, a column more) reads beside today's."""
    synth = two_captures[0]
    push_capture(synth, store)
    old = tmp_path / "old"
    shutil.copytree(synth, old, copy_function=shutil.copy2)
    new_id = capture_id(synth)[:-6] + "0ld0ld"
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["capture_id"] = new_id
    (old / "manifest.json").write_text(json.dumps(manifest))
    for table_dir in (old / "analysis").iterdir():
        if table_dir.is_dir():
            (table_dir / f"capture_id={capture_id(synth)}").rename(table_dir / f"capture_id={new_id}")
    part = next((old / "analysis" / "requests").glob("*/*.parquet"))
    table = pq.read_table(part)
    table = table.drop_columns(["model"]).append_column("legacy_note", table.column("client"))
    pq.write_table(table, part)
    push_capture(old, store, analyse=False)
    got = rows(store, "SELECT capture_id, count(*) AS n, count(model) AS with_model, count(legacy_note) AS legacy "
                      "FROM t_requests GROUP BY 1 ORDER BY 1")
    by_id = {r.pop("capture_id"): r for r in got}
    n = by_id[new_id]["n"]
    assert n > 0 and by_id == {new_id: {"n": n, "with_model": 0, "legacy": n},
                               capture_id(synth): {"n": n, "with_model": n, "legacy": 0}}


def test_pseudonymised_push(store, two_captures):
    demo = two_captures[1]  # its simulated agents work in /home/alice
    result = push_capture(demo, store, pseudonymise=True)
    assert result.pseudonymised and "bodies.parquet" in result.left_out and "flows.parquet" in result.left_out
    names = {line.split()[1] for line in run("ls", store).stdout.splitlines()}
    assert names == {capture_id(demo)}
    query = ("SELECT count(*) AS n, count(*) FILTER (WHERE text LIKE '%/home/alice%') AS clear, "
             "count(*) FILTER (WHERE text LIKE '%<path-home-%' OR text LIKE '%<user-%') AS pseudonyms "
             "FROM t_block_content")
    local, = rows(str(demo), query)
    pushed, = rows(store, query)
    assert local["clear"] > 0 and local["pseudonyms"] == 0
    assert pushed["n"] == local["n"] and pushed["clear"] == 0 and pushed["pseudonyms"] > 0
    assert rows(store, "SELECT count(*) AS n FROM requests") == rows(str(demo), "SELECT count(*) AS n FROM requests")
    # a report reads the pushed dataset alone: it needs none of the files that stayed on the machine
    run("report", store, "-o", str(demo.parent / "pseudonymised.html"))
    html = (demo.parent / "pseudonymised.html").read_text()
    assert "/home/alice" not in html and "kimi-code" in html


def _first(data, key: str):
    """The first value of `key` anywhere in a JSON document."""
    if isinstance(data, dict):
        if data.get(key):
            return data[key]
        data = list(data.values())
    for item in data if isinstance(data, list) else []:
        found = _first(item, key)
        if found:
            return found
    return None


def test_serve_over_a_store(store, two_captures, tmp_path, ctxtap_config):
    """`ctxtap serve URL --client ...` serves the selected captures read in place: sessions, and a request's
    page with its recorded headers fetched from the capture's flows object."""
    import http.client
    import os
    import signal
    import subprocess
    import sys
    import time

    push_capture(two_captures[1], store)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "CTXTAP_CONFIG_DIR": str(ctxtap_config), "TMPDIR": str(temp)}
    env.pop("HTTPS_PROXY", None)
    proc = subprocess.Popen([sys.executable, "-m", "ctxtap.cli.main", "serve", store, "--client", "kimi-code"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, url, seen = time.monotonic() + 120, None, []
        while time.monotonic() < deadline and url is None:
            line = proc.stderr.readline()
            seen.append(line)
            if "live view at " in line:
                url = line.split("live view at ", 1)[1].strip()
            elif not line and proc.poll() is not None:
                break
        assert url, "".join(seen)
        port, path = int(url.split(":")[2].split("/")[0]), "/" + url.split("/", 3)[3]
        con = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        con.request("GET", path)
        first = con.getresponse()
        first.read()
        cookie = first.getheader("Set-Cookie", "").split(";")[0]
        assert cookie, first.status
        con.request("GET", "/api/c/0/sessions", headers={"Cookie": cookie})
        sessions = con.getresponse()
        body = sessions.read().decode()
        assert sessions.status == 200 and "kimi-code" in body, body[:500]
        session_id = _first(json.loads(body), "session_id")
        con.request("GET", f"/api/c/0/requests?session={session_id}", headers={"Cookie": cookie})
        rid = _first(json.loads(con.getresponse().read()), "request_id")
        con.request("GET", f"/c/0/request?id={rid}", headers={"Cookie": cookie})
        page = con.getresponse()
        text = page.read().decode()
        from ctxtap.analysis.live import stored_flow

        flow_id = rows(str(two_captures[1]), f"SELECT flow_id FROM requests WHERE request_id = '{rid}'")[0]["flow_id"]
        local = stored_flow(two_captures[1], flow_id)  # what serving the local capture shows
        names = [k for k, _ in json.loads(local["request_headers"])]
        assert page.status == 200 and names and all(f"<code>{k}</code>" in text for k in names), text[-3000:]
        assert local["url"] and local["url"] in text
        assert not list(temp.glob("ctxtap-store-*")), "nothing is copied out of the store"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        proc.kill()


def test_record_push(store, tmp_path, ctxtap_config):
    """`ctxtap record --push URL` pushes the capture when the run ends."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CTXTAP_CONFIG_DIR": str(ctxtap_config)}
    env.pop("HTTPS_PROXY", None)
    out = tmp_path / "recorded"
    result = subprocess.run([sys.executable, "-m", "ctxtap.cli.main", "record", "--push", store, "-o", str(out),
                             "--no-effects", "--no-telemetry", "--", sys.executable, "-c", "pass"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "pushed " in result.stderr, result.stderr
    assert [line.split()[1] for line in run("ls", store).stdout.splitlines()] == [capture_id(out)]


def test_endpoint_from_flag_and_profile(store, seaweed, two_captures, tmp_path, monkeypatch):
    """The endpoint comes from --endpoint-url, else the environment, else the profile's endpoint_url."""
    push_capture(two_captures[0], store)
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # nowhere to go: a refused connection on a loopback port nobody listens on, said in one line
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    failed = run("ls", store, ok=False)
    assert failed.exit_code != 0 and "Traceback" not in failed.output
    assert capture_id(two_captures[0]) in run("ls", store, "--endpoint-url", seaweed.endpoint).stdout
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    config = tmp_path / "config"
    config.write_text(f"[profile team]\nregion = us-east-1\ns3 =\n  endpoint_url = {seaweed.endpoint}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "team")
    assert capture_id(two_captures[0]) in run("ls", store).stdout
