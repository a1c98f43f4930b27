"""The last gate before an attachment leaves the machine: scan every output file.

Three detectors, any one of which blocks publication:

* `credentials` — the recorder's own credential detectors (`redaction.scanner`), and any
  URL that still carries a password (`redaction.url_credentials`);
* `pii` — the pseudonymiser's rules (`redaction.personal.pii_rules`) with everything the
  run learned about the user, plus whatever the outputs themselves teach;
* `detect-secrets` — Yelp's scanner run in-process with its format plugins, an
  implementation that shares no code with ours, so a gap in our rules is not
  automatically a gap in the gate.

Findings name the file, the line, the detector and the kind, never the value
(the report of a failed publish must not itself leak).
"""

from __future__ import annotations

import copy
import multiprocessing
import re
import sys
import tempfile
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ctxtap.redaction.detectors import is_placeholder_password
from ctxtap.redaction.personal.identity import Identity
from ctxtap.redaction.personal.pii_rules import LearnedMatcher, find_pii_spans, ipv4_exempt
from ctxtap.redaction.scanner import find_spans
from ctxtap.redaction.url_credentials import find_url_passwords

# detect-secrets plugins that recognise a format. The entropy and keyword
# plugins are left out: they flag commit hashes, content hashes and schema
# words in every attachment, and our own assignment detector covers keywords.
DETECT_SECRETS_PLUGINS: tuple[str, ...] = (
    "ArtifactoryDetector",
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "IPPublicDetector",
    "JwtTokenDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)
DETECTORS: tuple[str, ...] = ("credentials", "pii", "detect-secrets")


class ScannerUnavailable(RuntimeError):
    """detect-secrets is not installed: publishing fails closed rather than skip a detector."""


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    detector: str
    kind: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.detector}: {self.kind}"


def _line_of(data: bytes | str, offset: int) -> int:
    newline = b"\n" if isinstance(data, bytes) else "\n"
    return data.count(newline, 0, offset) + 1  # type: ignore[arg-type]


def scan_credentials(data: bytes, name: str) -> list[Finding]:
    return [Finding(name, _line_of(data, s.start), "credentials", s.kind) for s in find_spans(data)]


def scan_url_passwords(data: bytes, name: str) -> list[Finding]:
    """Any `scheme://user:password@host` left, as written and with JSON escapes undone, whatever the
    host became (a pseudonym too): only ctxtap's placeholders and templates (`${DB_PASSWORD}`) pass."""
    findings = [Finding(name, _line_of(data, start), "credentials", "url-password")
                for start, _ in find_url_passwords(data)]
    if b"\\" in data:
        text = data.decode("utf-8", "replace")
        for number, line in enumerate(text.split("\n"), 1):
            if "\\" in line and "://" in line:
                unescaped = unescape_json(line).encode("utf-8", "surrogatepass")
                findings += [Finding(name, number, "credentials", "url-password")
                             for _ in find_url_passwords(unescaped)]
    return findings


_JSON_ESCAPE_RE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def unescape_json(text: str) -> str:
    """JSON string escapes undone (`\\n` -> newline, `\\u003c` -> `<`), everything else kept."""
    return _JSON_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE[m.group(2)], text)


def scan_pii(text: str, name: str, identity: Identity, matcher: LearnedMatcher | None = None) -> list[Finding]:
    """PII rules over each line of a rendered file, as written and with JSON escapes undone.

    Read as written, `\\n` counts as a boundary; read unescaped, a value glued to an
    escape (`\\nalice@host:~$`) is seen the way the pseudonymiser saw it.
    """
    matcher = matcher or LearnedMatcher()
    findings: list[Finding] = []
    kinds_of: dict[str, list[str]] = {}  # an attachment repeats its lines (resent history): each read once
    for number, line in enumerate(text.split("\n"), 1):
        kinds = kinds_of.get(line)
        if kinds is None:
            views = [(line, True)]
            if "\\" in line:
                views.append((unescape_json(line), False))
            kinds = kinds_of[line] = [span.kind for view, escaped in views
                                      for span in find_pii_spans(view, identity, escaped=escaped, learned=matcher)]
        findings += [Finding(name, number, "pii", kind) for kind in kinds]
    return findings


def scan_detect_secrets(paths: Iterable[Path], root: Path) -> list[Finding]:
    """detect-secrets over each file's distinct lines, with the format plugins only.

    Two worker processes share the lines where there are many (its plugins cost a few microseconds
    a line each, in Python): the machine's second core halves the gate's longest step."""
    try:
        import detect_secrets  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ScannerUnavailable(
            "detect-secrets is required to publish (it is the independent final scan): pip install detect-secrets"
        ) from exc
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="ctxtap-scan-") as tmp:
        jobs: list[tuple[str, list[str], dict[str, list[tuple[str, int]]]]] = []
        for suffix, where in _distinct_lines(paths, root).items():
            lines = list(where)
            parts = 2 if len(lines) >= _PARALLEL_LINES else 1
            step = -(-len(lines) // parts) or 1
            for i in range(0, max(len(lines), 1), step):
                # each part under the kind's suffix: plugins and filters read the file's name
                chunk = Path(tmp) / f"part{len(jobs)}" / f"distinct{suffix}"
                chunk.parent.mkdir()
                chunk.write_text("\n".join(lines[i : i + step]), encoding="utf-8", errors="surrogateescape")
                jobs.append((str(chunk), lines[i : i + step], where))
        if len(jobs) > 1 and sys.platform == "linux" and any(len(lines) >= _PARALLEL_LINES // 2 for _, lines, _ in jobs):
            # forked workers only run detect-secrets' Python (a spawned one would import it all again)
            with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
                results = list(pool.map(_scan_file, [path for path, _, _ in jobs]))
        else:
            results = [_scan_file(path) for path, _, _ in jobs]
        for (_, lines, where), found in zip(jobs, results, strict=True):
            for k, kind, value in found:
                if kind == "Basic Auth Credentials" and is_placeholder_password(value.encode("utf-8", "surrogatepass")):
                    continue  # `user:password@`, `:****@` in docs: the same allowance our detector makes
                if not 0 < k <= len(lines):
                    continue
                if kind == "Public IP (ipv4)" and _ip_exempt(lines, k, value):
                    continue  # `python 3.11.4.1`: the same allowance our IP rule makes
                findings += [Finding(rel, number, "detect-secrets", kind) for rel, number in where[lines[k - 1]]]
    return findings


_PARALLEL_LINES = 4000


def _scan_file(path: str) -> list[tuple[int, str, str]]:
    """detect-secrets' findings in one file: (line, type, value).

    Each plugin finds a secret only where one of its own regexes (`denylist`) matches the line, so
    only such lines are handed to its scanner, whose per-line, per-plugin dispatch costs far more
    than the regexes (most lines of an attachment hold nothing any plugin looks for)."""
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import get_settings, transient_settings

    source = Path(path)
    lines = source.read_text("utf-8", "surrogateescape").split("\n")
    regexes = _denylist()
    kept = [i for i, line in enumerate(lines) if any(r.search(line) for r in regexes)]
    if not kept:
        return []
    candidates = source.parent / "candidates" / source.name
    candidates.parent.mkdir(exist_ok=True)
    candidates.write_text("\n".join(lines[i] for i in kept), encoding="utf-8", errors="surrogateescape")
    config = {"plugins_used": [{"name": name} for name in DETECT_SECRETS_PLUGINS]}
    with transient_settings(config):
        # A `pragma: allowlist secret` comment inside a tool result must not silence the gate.
        # Its default "a secret has a letter" filter would silence the public-IP plugin entirely.
        get_settings().disable_filters(
            "detect_secrets.filters.allowlist.is_line_allowlisted",
            "detect_secrets.filters.heuristic.is_not_alphanumeric_string",
        )
        found = [(int(secret.line_number or 0), str(secret.type), secret.secret_value or "")
                 for secret in scan_file(str(candidates))]
    return [(kept[k - 1] + 1 if 0 < k <= len(kept) else 0, kind, value) for k, kind, value in found]


def _denylist() -> list[re.Pattern]:
    """The regexes of every plugin the gate runs (every one is a regex-based detector)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    by_name = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    out: list[re.Pattern] = []
    for name in DETECT_SECRETS_PLUGINS:
        plugin = by_name[name]
        if not issubclass(plugin, RegexBasedDetector):  # a plugin without regexes: every line is a candidate
            return [re.compile("")]
        out += list(plugin().denylist)
    return out


def _distinct_lines(paths: Iterable[Path], root: Path) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """Per file suffix, each distinct line in first-seen order and where it occurs (file, 1-based line).

    detect-secrets' format plugins read one line at a time, so a line is scanned once however often
    it is repeated: a 489-request publish wrote 1.4 million lines, 17,000 of them distinct, and took
    5 minutes to scan."""
    out: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for path in paths:
        rel = str(path.relative_to(root))
        where = out.setdefault(path.suffix, {})
        for number, line in enumerate(path.read_text("utf-8", "surrogateescape").split("\n"), 1):
            where.setdefault(line, []).append((rel, number))
    return out


def _ip_exempt(lines: list[str], number: int, value: str) -> bool:
    if not 0 < number <= len(lines):
        return False
    line = lines[number - 1]
    ip = value.split(":", 1)[0]
    start = line.find(ip)
    return start >= 0 and ipv4_exempt(line, start, ip)


def scan_tree(root: Path, identity: Identity, *, use_detect_secrets: bool = True) -> list[Finding]:
    """Every file under `root` through all detectors; sorted findings (empty: safe to publish)."""
    paths = sorted(p for p in Path(root).rglob("*") if p.is_file())
    texts = {p: p.read_bytes() for p in paths}
    learned = copy.deepcopy(identity)
    for data in texts.values():
        text = data.decode("utf-8", "replace")
        learned.learn_text(text)
        learned.learn_text(unescape_json(text))
    learned.refresh_accounts()
    matcher = LearnedMatcher()
    findings: list[Finding] = []
    for path, data in texts.items():
        rel = str(path.relative_to(root))
        findings += scan_credentials(data, rel)
        findings += scan_url_passwords(data, rel)
        findings += scan_pii(data.decode("utf-8", "replace"), rel, learned, matcher)
    if use_detect_secrets:
        findings += scan_detect_secrets(paths, Path(root))
    return sorted(set(findings))
