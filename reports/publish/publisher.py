"""`ctxtap publish`: per-client attachments that keep block order and wording, and nothing personal.

    result = publish(Path("captures/x"), Path("attachments"), PublishOptions(clients=("codex",)))

Steps, all or nothing:

1. analyse the capture (if needed) and read requests, blocks, headers, bodies;
2. learn who the user is from everything in it (`redaction.personal.identity`);
3. build each client's attachment with every string credential-redacted
   (`redaction.Redactor`) and pseudonymised (`redaction.personal.pii.PiiRedactor`, one
   numbered instance for the whole run, so placeholders agree across files);
4. write JSON and Markdown into a private temporary directory next to the output;
5. scan every file (`redaction.publish_scan`: our credential and PII rules plus
   detect-secrets); any finding deletes the temporary directory and raises
   `PublishError` naming file and line;
6. rename the directory into place (atomic on one filesystem).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxtap import __version__
from ctxtap.capture.private import private_dir, tighten
from ctxtap.redaction import PLACEHOLDER_RE, RULESET_VERSION, Redactor
from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii import PII_RULESET_VERSION, PiiRedactor
from ctxtap.redaction.personal.pii_rules import NUMBERED_RE
from ctxtap.redaction.publish_scan import DETECT_SECRETS_PLUGINS, DETECTORS, Finding, scan_tree
from ctxtap.reports.publish.build import AttachmentBuilder, BuildOptions, CaptureData, Cleaner, load_capture
from ctxtap.reports.publish.render import write_attachment

COVERAGE = (
    "Every model request this client made in the capture. Threads (the main loop, subagents) come "
    "first, in order; the first request of each thread is shown in full, with all its blocks in the "
    "order observed on the wire: system/developer blocks, the tool catalogue (names and descriptions), "
    "environment blocks, the task, and the tool loop (calls and results). Each later request lists only "
    "the blocks that are new at their position; the JSON still lists every block of every request (in "
    "order, with `new` marking the same thing) and keeps each distinct content once under `contents`. "
    "Side requests (titles, warmups, probes, compaction) are listed separately, in full. Request "
    "headers and other body fields appear in full for a thread's first request and as changes after. "
    "Long opaque blobs (encrypted reasoning, images) are reduced to their size."
)
_SAFE_STEM_RE = re.compile(r"[^A-Za-z0-9._-]+")


class PublishError(Exception):
    """Publication refused; nothing was written. `findings` says where (never what)."""

    def __init__(self, message: str, findings: list[Finding] | None = None) -> None:
        self.findings = findings or []
        if self.findings:
            message += "\n" + "\n".join(f"  {f}" for f in self.findings[:50])
            if len(self.findings) > 50:
                message += f"\n  ... {len(self.findings) - 50} more"
        super().__init__(message)


@dataclass(frozen=True)
class PublishOptions(BuildOptions):
    clients: tuple[str, ...] = ()
    force: bool = False
    # Test hooks for proving the final scan fails closed; not exposed on the command line.
    skip_pii_kinds: frozenset[str] = field(default_factory=frozenset)
    skip_credentials: bool = False
    use_detect_secrets: bool = True


@dataclass
class PublishResult:
    out_dir: Path
    files: list[Path]
    clients: list[str]
    by_class: dict[str, int]


def default_out_dir(capture_dir: Path) -> Path:
    capture_dir = Path(capture_dir).resolve()
    return capture_dir.parent / f"{capture_dir.name}-published"


def _learn_identity(data: CaptureData) -> Identity:
    identity = Identity()
    for flow in data.flows.values():
        identity.learn_headers([(str(k), str(v)) for k, v in json.loads(flow.get("request_headers") or "[]")])
    for text in data.raw_strings():
        identity.learn_text(text)
    env = data.capture.manifest.environment  # the recorded machine's facts (ctxtap.capture.environment)
    identity.learn_facts(env.get("user"), env.get("host"),
                         [str(env[k]) for k in ("cwd", "home", "shell_prompt") if env.get(k)])
    identity.refresh_accounts()
    return identity


def _cleaner(cred: Redactor | None, pii: PiiRedactor) -> Cleaner:
    """Credential redaction, then pseudonyms. A string is cleaned once and its result reused: requests
    repeat their header values, tool names and body fields, and pseudonyms are stable per value (the
    identity is learnt from the whole capture first)."""
    done: dict[tuple[str, bool], tuple[str, collections.Counter[str], collections.Counter[str]]] = {}

    def cleaned(value: str, escaped: bool) -> str:
        hit = done.get((value, escaped))
        if hit is not None:  # counted again, as if cleaned again: the manifest counts replacements made
            pii.counts.update(hit[1])
            pii.rule_counts.update(hit[2])
            return hit[0]
        counts, rules = pii.counts.copy(), pii.rule_counts.copy()
        out = pii.redact_text(cred.redact_text(value) if cred else value, escaped=escaped)
        done[(value, escaped)] = (out, pii.counts - counts, pii.rule_counts - rules)
        return out

    def text(value: str) -> str:
        return cleaned(value, False)

    def json_text(value: str) -> str:
        return cleaned(value, True)

    def headers(value: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return pii.redact_headers(cred.redact_headers(value) if cred else value)

    def session(value: str) -> str:
        return pii.redact_text(cred.redact_text(value) if cred else value, hint="session")

    return Cleaner(text, json_text, headers, session)


def _present(att: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Placeholders in the attachment: credential ones by kind, PII ones as distinct values by kind."""
    text = json.dumps(att, ensure_ascii=False)
    cred = collections.Counter(
        m.group().split(b":")[1].decode() for m in PLACEHOLDER_RE.finditer(text.encode("utf-8", "surrogatepass"))
    )
    distinct: dict[str, set[str]] = collections.defaultdict(set)
    for m in NUMBERED_RE.finditer(text):
        distinct[m.group()[1 : m.group().rindex("-")]].add(m.group())
    return {"credential": dict(sorted(cred.items())), "pii": {k: len(v) for k, v in sorted(distinct.items())}}


def _manifest(
    att: dict[str, Any], pii_delta: dict[str, int], rule_delta: dict[str, int], cred_delta: dict[str, int],
    identity: Identity, data: CaptureData,
) -> dict[str, Any]:
    by_class = dict(sorted(pii_delta.items()))
    by_class.update({f"credential:{k}": v for k, v in sorted(cred_delta.items())})
    by_rule = dict(sorted(rule_delta.items()))
    by_rule.update({f"credential/{k}": v for k, v in sorted(cred_delta.items())})
    counts = data.capture.manifest.counts or {}
    return {
        "rulesets": {"credentials": RULESET_VERSION, "pii": PII_RULESET_VERSION},
        "by_class": by_class,
        "by_rule": by_rule,
        "placeholders_present": _present(att),
        "identity_learned": {
            "users": len(identity.users), "hosts": len(identity.hosts), "full_names": len(identity.names),
            "accounts": len(identity.accounts), "temp_dirs": len(identity.tmpdirs),
        },
        "capture_time": {
            "credential_ruleset": data.capture.manifest.redaction_ruleset,
            "credential_redactions": dict(sorted((counts.get("redactions") or {}).items())),
        },
        "final_scan": {
            "detectors": list(DETECTORS),
            "detect_secrets_plugins": list(DETECT_SECRETS_PLUGINS),
            "policy": "publication fails on any finding, and nothing is written.",
        },
    }


def _delta(after: collections.Counter[str], before: collections.Counter[str]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}


def _stem(client: str) -> str:
    return _SAFE_STEM_RE.sub("-", client).strip("-.") or "client"


@dataclass
class Prepared:
    """Attachments built and cleaned, not yet written or scanned."""

    attachments: list[tuple[str, dict[str, Any]]]
    identity: Identity
    by_class: dict[str, int]


def prepare(capture_dir: Path, options: PublishOptions | None = None) -> Prepared:
    """Steps 1-3: read the capture, learn the user, build every requested client's attachment."""
    from ctxtap.analysis.build import ensure_analysis
    from ctxtap.analysis.db import connect
    from ctxtap.capture.paths import redaction_key

    options = options or PublishOptions()
    capture_dir = Path(capture_dir)
    ensure_analysis(capture_dir)
    con = connect([capture_dir])
    try:
        data = load_capture(capture_dir, con)
    finally:
        con.close()
    available = data.clients()
    clients = list(options.clients) or available
    unknown = [c for c in clients if c not in available]
    if unknown:
        raise PublishError(f"no requests from {', '.join(unknown)} in this capture (clients: "
                           f"{', '.join(available) or 'none'})")
    if not clients:
        raise PublishError("the capture holds no model requests: nothing to publish")

    identity = _learn_identity(data)
    cred = None if options.skip_credentials else Redactor(redaction_key(), data.capture.manifest.capture_id)
    pii = PiiRedactor(numbered=True, identity=identity, skip_kinds=options.skip_pii_kinds)
    cleaner = _cleaner(cred, pii)
    for request in data.requests:
        pii.reserve(request.get("session_id") or "", hint="session")

    attachments: list[tuple[str, dict[str, Any]]] = []
    total: collections.Counter[str] = collections.Counter()
    for client in clients:
        before_pii, before_rule = collections.Counter(pii.counts), collections.Counter(pii.rule_counts)
        before_cred = collections.Counter(cred.counts) if cred else collections.Counter()
        built = AttachmentBuilder(data, cleaner, options).build(client)
        pii_delta = _delta(pii.counts, before_pii)
        cred_delta = _delta(cred.counts, before_cred) if cred else {}
        contents = built.pop("contents")
        att: dict[str, Any] = {
            "format": built.pop("format"),
            "generated_by": {"ctxtap": __version__},
            "client": built.pop("client"),
            "coverage": COVERAGE,
            **built,
        }
        att["redaction"] = _manifest(att | {"contents": contents}, pii_delta, _delta(pii.rule_counts, before_rule),
                                     cred_delta, identity, data)
        att["contents"] = contents
        total.update(pii_delta)
        attachments.append((client, att))
    return Prepared(attachments, pii.identity, dict(total))


def write_all(prepared: Prepared, directory: Path) -> list[Path]:
    """Step 4: `<client>.json` and `<client>.md` for every attachment into `directory`."""
    files: list[Path] = []
    for client, att in prepared.attachments:
        files += write_attachment(att, directory, _stem(client))
    return files


def publish(capture_dir: Path, out_dir: Path | None = None, options: PublishOptions | None = None,
            phase: Callable[[str], None] = lambda _: None) -> PublishResult:
    """Write scanned attachments for a capture's clients into `out_dir`, or raise `PublishError`.
    `phase` is told each step's name (a command shows it)."""
    options = options or PublishOptions()
    phase("publishing: reading the capture, redacting and pseudonymising")
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(Path(capture_dir))
    if out_dir.exists() and any(out_dir.iterdir()) and not options.force:
        raise PublishError(f"{out_dir} exists and is not empty (use --force to replace it)")
    prepared = prepare(capture_dir, options)
    if not out_dir.parent.exists():
        private_dir(out_dir.parent)
    tmp = Path(tempfile.mkdtemp(prefix=".ctxtap-publish-", dir=out_dir.parent))
    try:
        phase("publishing: writing the attachments")
        files = write_all(prepared, tmp)
        phase("publishing: the final scan of every file")
        findings = scan_tree(tmp, prepared.identity, use_detect_secrets=options.use_detect_secrets)
        if findings:
            raise PublishError(
                f"publication refused: the final scan found {len(findings)} item(s) the redaction missed "
                "(file:line: detector: kind). Nothing was written.",
                findings,
            )
        # Private like the capture (mkdtemp made the directory 0700): the attachments still hold the
        # user's prompts and code; sharing them is a deliberate copy, not a readable folder.
        tighten(tmp)
        _move_into_place(tmp, out_dir, force=options.force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return PublishResult(out_dir, [out_dir / f.name for f in files],
                         [c for c, _ in prepared.attachments], prepared.by_class)


def _move_into_place(tmp: Path, out_dir: Path, *, force: bool) -> None:
    """Rename the scanned directory to `out_dir`; an old one is only removed after the swap."""
    if out_dir.exists():
        if any(out_dir.iterdir()) and not force:
            raise PublishError(f"{out_dir} appeared while publishing; not replacing it")
        old = out_dir.with_name(out_dir.name + ".old-" + tmp.name.rsplit("-", 1)[-1])
        os.rename(out_dir, old)
        try:
            os.rename(tmp, out_dir)
        except OSError:
            os.rename(old, out_dir)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out_dir)
