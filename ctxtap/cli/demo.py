"""`ctxtap demo`: the whole product on built-in traffic, with no API keys and no network.

Simulated Claude Code, Codex, Kimi and Gemini clients run their tool loops
through the real recording proxy to the scripted model server on loopback;
the capture is then analysed and rendered, and the paths are printed.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from ctxtap.capture.paths import default_captures_dir
from ctxtap.cli.invocation import invoked_as

DEMO_HOSTS = ("api.anthropic.com", "api.openai.com", "api.kimi.com", "generativelanguage.googleapis.com")


def run_demo(out: Path, turns: int = 3, echo=click.echo) -> dict:
    """Record the demo agents into `out`, analyse, render. Returns what happened."""
    from ctxtap.demo.agents import AGENTS, run_all
    from ctxtap.modelserver import ModelServer
    from ctxtap.proxy_addons.runner import BackgroundProxy, ProxyConfig, client_env

    started = time.perf_counter()
    with ModelServer(script="long") as server:
        echo(f"scripted model server on {server.url} (loopback only)")
        routes = [f"{host}={server.url}" for host in DEMO_HOSTS]
        proxy = BackgroundProxy(ProxyConfig(out=out, routes=routes, command=["ctxtap", "demo"])).start()
        try:
            env = client_env(proxy.port)
            echo(f"recording proxy on 127.0.0.1:{proxy.port}, capture {out}")
            results = run_all(proxy=f"http://127.0.0.1:{proxy.port}", ca_file=env["SSL_CERT_FILE"], turns=turns,
                              agents=AGENTS)
        finally:
            proxy.stop()
    for name, summary in results.items():
        status = "ok" if summary.ok else f"FAILED: {summary.error}"
        echo(f"  {name:<7} {len(summary.calls)} model calls, {summary.retries} retried after an error, {status}")
    return {"results": results, "seconds": time.perf_counter() - started}


def analyse_and_render(out: Path, echo=click.echo) -> Path | None:
    """Analyse the capture and render its report (when the reports package is installed)."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect
    from ctxtap.cli.summary import summary_lines

    ensure_analysis(out)
    for line in summary_lines(connect([out])):
        echo(line)
    try:
        from ctxtap.reports.html.render import render_capture_report
    except ImportError:  # reports not built yet
        return None
    return render_capture_report([out])


@click.command()
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Capture directory (default: captures/demo-<time>).")
@click.option("--turns", default=3, show_default=True, help="User turns per simulated agent.")
def demo(out: Path | None, turns: int) -> None:
    """Run the built-in demo: simulated agents -> recording proxy -> analysis -> report.

    No API keys and no network: four simulated clients shaped like Claude Code
    (Messages + SSE), Codex (Responses over WebSocket), Kimi (Chat Completions +
    SSE) and Gemini CLI talk to a scripted model server on 127.0.0.1 through the
    real recording proxy. Each runs a multi-step tool loop with growing history,
    one cache miss caused by a timestamp early in its prompt, a side request and
    one rate-limit error.
    """
    from ctxtap.cli.failures import capture_dir_problem, loopback_problem

    out = out or default_captures_dir() / time.strftime("demo-%Y%m%d-%H%M%S")
    problem = capture_dir_problem(out) or loopback_problem()
    if problem:
        raise click.ClickException(f"the demo cannot run: {problem}")
    info = run_demo(out, turns)
    failed = [n for n, s in info["results"].items() if not s.ok]
    if len(failed) == len(info["results"]):
        raise click.ClickException(
            f"demo agents failed: {', '.join(failed)}; every agent failed, see the reason after each above "
            f"(the capture at {out} holds what reached the proxy). Rerun with CTXTAP_DEBUG=1 for details.")
    report = analyse_and_render(out)
    click.echo(f"\ncapture:  {out}")
    query = shlex.quote("SELECT request_id, miss_cause, divergence_summary FROM prefix WHERE miss_cause IS NOT NULL")
    click.echo(f"analysis: {out / 'analysis'}  (try: {invoked_as()} sql {shlex.quote(str(out))} {query})")
    if report is not None:
        click.echo(f"report:   {report}")
    if failed:
        click.echo(f"demo agents failed: {', '.join(failed)} (the reason is after each agent above)", err=True)
        sys.exit(1)
