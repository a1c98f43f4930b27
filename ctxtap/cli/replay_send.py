"""`ctxtap replay CAPTURE --send --upstream URL`: the execution replay's plan, confirmation, run and comparison."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

import click


def _echo(line: str) -> None:
    click.echo(f"ctxtap replay: {line}", err=True)


def _cost(planned) -> float | None:
    from ctxtap.analysis.cache.prices import PriceTable

    table = PriceTable.load()
    total, known = 0.0, False
    for item in planned:
        try:
            model = json.loads(item.body).get("model")
        except (ValueError, AttributeError):
            model = None
        price = table.find(model if isinstance(model, str) else None)
        if price is not None:
            total += item.tokens_estimated * price.per_token("input")
            known = True
    return total if known else None


def send_replay(cassette, out: Path, *, upstream: str | None, thread_id: str | None, session_id: str | None,
                request: str | None = None,
                strip_timestamps: bool, move_dynamic_after_breakpoint: bool, sort_tools: bool,
                drop_blocks: list[str], breakpoints: list[int], allow_placeholders: bool, yes: bool,
                diagnostics: bool = False) -> int:
    from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig, ProxyStartError, client_env
    from ctxtap.replay.readonly import replay_link
    from ctxtap.replay.send import SendError, Transforms, credentials, plan, request_headers, select, send_all

    if not upstream:
        raise click.UsageError("--send needs --upstream URL (the provider endpoint to re-send to)")
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(f"{upstream!r} is not an http(s) URL", param_hint="--upstream")
    transforms = Transforms(strip_timestamps, move_dynamic_after_breakpoint, sort_tools, drop_blocks, breakpoints)
    try:
        calls, label = select(cassette, cassette.directory, thread_id, session_id, request)
        planned = plan(cassette, calls, transforms)
        auth = credentials(calls[0].provider, upstream)
    except SendError as exc:
        raise click.ClickException(f"cannot re-send: {exc}") from None
    held = [p for p in planned if p.placeholders]
    if held and not allow_placeholders:
        names = "; ".join(f"{p.describe()} holds {p.placeholders} redaction placeholder(s)" for p in held[:5])
        raise click.ClickException(
            f"refusing to send: {names}. A placeholder stands for a secret the capture never stored, so the "
            f"request would not be the one recorded; pass --allow-placeholders to send them as placeholders.")
    tokens = sum(p.tokens_estimated for p in planned)
    cost = _cost(planned)
    priced = f"${cost:.4f}" if cost is not None else "unknown cost"
    _echo(f"will send {len(planned)} requests of {label} to {upstream} "
          f"(~{tokens:,} input tokens, est. {priced} before "
          f"cache discounts); transforms: {', '.join(transforms.names()) or 'none'}")
    _echo("tool results are the recorded ones: nothing is executed")
    if diagnostics:
        _echo("each request asks the provider why its cache missed against its thread's previous answer "
              "(Anthropic: diagnostics.previous_message_id; OpenAI Responses: prompt_cache_options."
              "comparison_response_id); other APIs have no such field and are sent as recorded")
    for item in planned:
        notes = "; ".join(item.notes)
        _echo(f"  {item.describe()}: ~{item.tokens_estimated:,} tokens, {len(item.edits)} edits"
              f"{' (' + notes + ')' if notes else ''}")
    if not yes:
        if not sys.stdin.isatty():
            raise click.ClickException("not sending without confirmation: pass --yes to send from a script")
        click.confirm("send these requests?", abort=True, err=True)
    link = replay_link(cassette, "send", upstream=upstream, transforms=transforms.names(), selection=label)
    hosts = sorted({c.host for c in calls})
    config = ProxyConfig(out=out, routes=[f"{h}={upstream.rstrip('/')}" for h in hosts], offline=True,
                         command=["ctxtap", "replay", "--send"], replay=link)
    try:
        proxy = BackgroundProxy(config).start()
    except ProxyStartError as exc:
        raise click.ClickException(f"cannot start the recording proxy: {exc}") from None
    try:
        env = client_env(proxy.port)
        results = send_all(planned, proxy_url=f"http://127.0.0.1:{proxy.port}", ca_file=env["SSL_CERT_FILE"],
                           headers_of=lambda c: request_headers(c.request_headers), auth=auth, echo=_echo,
                           diagnostics=diagnostics, thread_of=_threads(cassette.directory) if diagnostics else None)
    finally:
        proxy.stop()
    keys = [r.planned.call.key for r in results]
    for line in compare_lines(cassette.directory, out, cassette.capture_id, keys):
        click.echo(line, err=True)
    click.echo(f"re-sent run: {out} (trace {link['trace_id']}); compare with `ctxtap diff` or `ctxtap report`",
               err=True)
    return 0 if all(r.status == 200 for r in results) else 1


def _threads(source: Path):
    """A recorded call's thread, from the source capture's analysis (the diagnostics baseline is the
    thread's previous answer)."""
    from ctxtap.analysis.db import connect, fetch_rows

    rows = fetch_rows(connect([source]), "SELECT flow_id, ws_index, thread_id FROM requests")
    threads = {_key(r): r["thread_id"] for r in rows}
    return lambda call: threads.get(call.key, "")


def _key(row: dict) -> str:
    return row["flow_id"] if row["ws_index"] is None else f"{row['flow_id']}#{row['ws_index']}"


def compare_lines(source: Path, new: Path, src_id: str, source_keys: list[str]) -> list[str]:
    """Cache reads, cost and latency of the re-sent requests against the recorded ones, with the diff engine."""
    from ctxtap.analysis.blocks.volatile import normalise
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.compare.diff import request_diff
    from ctxtap.analysis.db import connect, fetch_rows

    ensure_analysis(source)
    ensure_analysis(new)
    con = connect([source, new])
    cols = ("request_id, request_number, capture_id, flow_id, ws_index, cache_read_tokens, input_tokens_reported, "
            "cost_usd, duration_ms")
    old = {_key(r): r for r in fetch_rows(con, f"SELECT {cols} FROM requests WHERE capture_id = ?", [src_id])}
    sent = fetch_rows(con, f"SELECT {cols} FROM requests WHERE capture_id <> ? ORDER BY ts_start", [src_id])
    lines = []
    totals = {"a_read": 0, "a_in": 0, "b_read": 0, "b_in": 0, "a_cost": 0.0, "b_cost": 0.0, "a_ms": 0, "b_ms": 0}
    for key, b in zip(source_keys, sent, strict=False):
        a = old.get(key)
        if a is None:
            continue
        diff = request_diff(con, a["request_id"], b["request_id"], normalise=normalise,
                            a_capture_id=a["capture_id"], b_capture_id=b["capture_id"])
        lines.append(f"  request #{a['request_number']}: cache read {a['cache_read_tokens'] or 0:,} -> "
                     f"{b['cache_read_tokens'] or 0:,} "
                     f"tokens; layout vs recorded: {diff.first_divergence_words}")
        for side, row in (("a", a), ("b", b)):
            totals[f"{side}_read"] += row["cache_read_tokens"] or 0
            totals[f"{side}_in"] += row["input_tokens_reported"] or 0
            totals[f"{side}_cost"] += row["cost_usd"] or 0.0
            totals[f"{side}_ms"] += row["duration_ms"] or 0

    def rate(side: str) -> str:
        return f"{totals[side + '_read'] / totals[side + '_in']:.0%}" if totals[side + "_in"] else "n/a"

    head = (f"cache hit rate {rate('a')} recorded -> {rate('b')} re-sent; cost ${totals['a_cost']:.4f} -> "
            f"${totals['b_cost']:.4f}; total latency {totals['a_ms']:,.0f} ms -> {totals['b_ms']:,.0f} ms")
    return [head, *lines]
