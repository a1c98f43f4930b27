"""Record the real-CLI tier's runs as committed fixtures: `python -m tests.realcli.record_fixtures [CLI...]`.

Each CLI runs exactly as in the tier (same pins, task, throwaway HOME, fixture
repository, loopback-only namespace), but only where the namespace can show HOME at
/home/alice and the install cache at /opt/agents on host alice-laptop, so nothing of
this machine is recorded. Two variants: `basic` (the tier's run) and `instructions`
(the same with AGENTS.md, CLAUDE.md and GEMINI.md in the repository). A run is kept
only if it passes the tier's checks; its capture is exported as HAR (bodies as
stored, i.e. already redacted), gzipped, next to a JSON file with the versions, the
command and the counts the offline import test (tests/ingest/test_realcli_fixtures.py) expects.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from ctxtap.capture.store import Capture
from tests.proxyharness import all_stored_bytes, run_ctxtap
from tests.realcli import checks, workspace
from tests.realcli.clis import CLIS, TASK, CliSpec
from tests.realcli.runs import FINAL_TEXT, SCRIPT, SCRIPTED_CALLS, CliRun, read_calls, run_cli
from tests.realcli.sandbox import FIXED_AGENTS, FIXED_HOME, FIXED_HOSTNAME, namespace
from tests.realcli.toolbox import Timings, install_all

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "realcli"
VARIANTS = {"basic": False, "instructions": True}  # variant -> project instruction files in the repository
COUNTED = ("flows", "model_requests", "ws_messages", "by_client", "by_api")
# The variables `ctxtap record` adds for the CLI (proxy and CA trust), besides the run's own.
RECORD_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY (and lower-case)", "NO_PROXY", "NODE_EXTRA_CA_CERTS",
              "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "CODEX_CA_CERTIFICATE", "NODE_USE_ENV_PROXY=1")


class RecordingError(RuntimeError):
    """A run that may not become a fixture (failed, or it recorded something of this machine)."""


def har_path(cli: str, variant: str, root: Path = FIXTURES) -> Path:
    return root / cli / f"{variant}.har.gz"


def meta_path(cli: str, variant: str, root: Path = FIXTURES) -> Path:
    return root / cli / f"{variant}.json"


def instructions_seen(capture: Path) -> list[str]:
    """Which of the repository's instruction files (by a line only that file has) reached a model request."""
    sent = b"".join((e.request_body or b"") + b"".join(m.content for m in e.ws_messages if m.from_client)
                    for e in Capture.open(capture).exchanges())
    return sorted(name for name, content in workspace.INSTRUCTION_FILES.items()
                  if content.splitlines()[-1].removeprefix("- ").encode() in sent)


def _verify(spec: CliSpec, run: CliRun, config: Path) -> dict:
    """The tier's checks on one run; returns `ctxtap info --json` of its capture."""
    result = run.result
    if result.returncode != 0 or FINAL_TEXT not in " ".join(result.stdout.split()) or run.repo_changes:
        raise RecordingError(f"{spec.name}: the run failed ({run.repo_changes})\n{result.describe()}")
    info = json.loads(run_ctxtap(["info", str(run.capture), "--json"], config).stdout)
    if info["by_client"] != {spec.client: info["model_requests"]} or not info["redactions"]:
        raise RecordingError(f"{spec.name}: clients {info['by_client']}, redactions {info['redactions']}")
    calls = read_calls(run.capture)
    problems = checks.loop_problems(calls, spec.client, FINAL_TEXT, SCRIPTED_CALLS, spec.title_model,
                                   spec.shell_output, spec.finish)
    stored = all_stored_bytes(run.capture)
    problems += checks.leaked_secrets(stored, run.setup.secrets) + checks.leaked_secrets(stored, run.hidden)
    if problems:
        raise RecordingError(f"{spec.name}: " + "; ".join(problems))
    return info


def _client_version(capture: Path) -> str | None:
    flows = Capture.open(capture).flows().to_pylist()
    return next((f["client_version"] for f in flows if f["is_model"] and f["client_version"]), None)


def _shown_env(env: dict[str, str], secrets: tuple[str, ...]) -> dict[str, str]:
    """The run's own variables as the CLI saw them, dummy keys masked (ctxtap's config dir left out)."""
    venv_bin = str(Path(sys.executable).parent)
    shown = {}
    for key, value in sorted(env.items()):
        if key == "CTXTAP_CONFIG_DIR":
            continue
        for secret in secrets:
            value = value.replace(secret, "<dummy key>")
        shown[key] = value.replace(venv_bin, "<ctxtap venv>/bin")
    return shown


def record(spec: CliSpec, variant: str, command: list[Path], path_dirs: list[Path], config: Path, work: Path,
           out: Path) -> dict:
    """Run SPEC once, check it, and write OUT/<name>/<variant>.har.gz and .json; returns the meta."""
    root = work / f"{spec.name}-{variant}"
    run = run_cli(spec, command, path_dirs, config, root, instructions=VARIANTS[variant])
    info = _verify(spec, run, config)
    seen = instructions_seen(run.capture)
    if seen and not VARIANTS[variant]:
        raise RecordingError(f"{spec.name}: instruction files {seen} seen without any in the repository")
    har = root / "capture.har"
    run_ctxtap(["export", str(run.capture), "--har", str(har)], config)
    data = har.read_bytes()
    hidden = [p for p in run.hidden if p.encode() in data]
    if hidden:
        raise RecordingError(f"{spec.name}: the HAR names {hidden}")
    target = har_path(spec.name, variant, out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    meta = {
        "cli": spec.name,
        "variant": variant,
        "repo_instruction_files": sorted(workspace.INSTRUCTION_FILES) if VARIANTS[variant] else [],
        "package": spec.install_spec,
        "installer": spec.installer,
        "client": spec.imported_client,  # the fixture is a HAR: imported without the command line
        "client_version": _client_version(run.capture),
        "api": spec.api,
        "title_model": spec.title_model,
        "script": SCRIPT,
        "task": TASK,
        "argv": run.argv,
        "home": str(run.home),
        "hostname": FIXED_HOSTNAME,
        "env": _shown_env(run.env, run.setup.secrets),
        "config_files": {rel: _mask(text, run.setup.secrets) for rel, text in run.setup.files.items()},
        "expect": {key: info[key] for key in COUNTED},
        "instructions_seen": seen,  # the files whose text reached a model request
    }
    meta_path(spec.name, variant, out).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return meta


def _mask(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "<dummy key>")
    return text


def write_readme(out: Path) -> None:
    """OUT/README.md: one row per recorded CLI, read from its meta.json."""
    rows = []
    for path in sorted(out.glob("*/*.json")):
        meta = json.loads(path.read_text())
        argv = " ".join(_quote(a) for a in meta["argv"]).replace(json.dumps(meta["task"]), '"$TASK"')
        expect = meta["expect"]
        apis = ", ".join(f"{k} {v}" for k, v in sorted(expect["by_api"].items()))
        size = har_path(meta["cli"], meta["variant"], out).stat().st_size // 1024
        seen = ", ".join(meta["instructions_seen"]) or "-"
        rows.append(f"| `{meta['cli']}/{meta['variant']}` | `{meta['package']}` | {meta['client']} "
                    f"{meta['client_version'] or ''} | {expect['flows']} / {expect['model_requests']} | {apis} "
                    f"| {seen} | {size} KB | `{argv}` |")
    text = README.format(home=FIXED_HOME, agents=FIXED_AGENTS, host=FIXED_HOSTNAME, rows="\n".join(rows),
                         record_env=", ".join(f"`{v}`" for v in RECORD_ENV))
    (out / "README.md").write_text(text)


def _quote(arg: str) -> str:
    return json.dumps(arg) if re.search(r"[^\w@%+=:,./-]", arg) else arg


README = """# Real-CLI recordings (fixtures)

What the **real, unmodified** coding CLIs sent, recorded by the real-CLI tier (`tests/realcli`, see its
README) through `ctxtap record`, against the scripted model server (`ctxtap.modelserver`, script
`basic`: two parallel shell calls `pwd` and `ls`, then a final text). Synthetic data only: dummy keys
(redacted before anything was written), the tier's fixture repository, a throwaway HOME.

Each CLI's folder holds two recordings: `basic` (the tier's run) and `instructions` (the same run with
AGENTS.md, CLAUDE.md and GEMINI.md committed in the repository, see `tests/realcli/workspace.py`). Each
is `<variant>.har.gz` (the capture exported with `ctxtap export CAPTURE --har FILE`, bodies as stored,
i.e. decoded and redacted; gzipped) and `<variant>.json` (package, client version, the exact command
and environment as the CLI saw them, its config files with the key masked, the counts `ctxtap info
--json` gave for the recording, and which instruction files reached the model).
`tests/ingest/test_realcli_fixtures.py` imports every one offline (`ctxtap import`) and checks those counts,
the client, that every request parses and every tool call comes back as a result, and where the
instruction files went.

Every run saw HOME at `{home}`, worked in `{home}/work/demo-repo`, had its CLI installed under
`{agents}/` and ran on host `{host}`, inside a network namespace with only loopback: nothing in these
files names a path or host of the recording machine. The task (`$TASK`):

> Read the current directory, list up to five entries from its first level, do not modify any files,
> and do not access the network.

| fixture | package | client seen | flows / model requests | model APIs | instructions sent | size | command |
|---|---|---|---|---|---|---|---|
{rows}

Besides the variables in `meta.json`, `ctxtap record` gave each CLI {record_env}.

## Regenerate

```sh
.venv/bin/python -m tests.realcli.record_fixtures                          # all CLIs, both variants
.venv/bin/python -m tests.realcli.record_fixtures --variant basic gemini    # one
```

It needs what the tier needs (npm, Python 3.13 for kimi-cli, `unshare`) plus a namespace with its own
mounts and host name (`unshare -nmu` as root, `-rnmu` otherwise); it refuses to write otherwise. A run is
written only if it passes the tier's checks and names no real path. The model server's answers and
the CLIs' dates and ids change with every recording; re-run the fixture test afterwards.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clis", nargs="*", metavar="CLI", help=f"default: all ({', '.join(sorted(CLIS))})")
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="default: all")
    args = parser.parse_args(argv)
    unknown = [c for c in args.clis if c not in CLIS]
    if unknown:
        parser.error(f"unknown CLI {unknown}; known: {sorted(CLIS)}")
    ns = namespace()
    if ns.prefix is None or not ns.fixed_paths:
        print(f"record_fixtures: needs a loopback-only namespace with its own mounts and host name "
              f"({ns.reason or 'mounts or host name not permitted here'})", file=sys.stderr)
        return 2
    specs = [CLIS[c] for c in (args.clis or sorted(CLIS))]
    tools = install_all(specs, Timings())
    work = Path(tempfile.mkdtemp(prefix="ctxtap-record-fixtures-"))
    config = work / "ctxtap-config"
    config.mkdir()
    failed = []
    try:
        for spec in specs:
            for variant in args.variant or list(VARIANTS):
                try:
                    command, path_dirs = tools.command_for(spec)
                    meta = record(spec, variant, command, path_dirs, config, work, args.out)
                except pytest.skip.Exception as exc:
                    print(f"{spec.name}: skipped: {exc}", file=sys.stderr)
                    failed.append(spec.name)
                except RecordingError as exc:
                    print(f"{spec.name}/{variant}: not written: {exc}", file=sys.stderr)
                    failed.append(spec.name)
                else:
                    print(f"{spec.name}/{variant}: {meta['expect']['model_requests']} model requests, instructions "
                          f"seen {meta['instructions_seen']} -> {har_path(spec.name, variant, args.out)}")
        write_readme(args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
