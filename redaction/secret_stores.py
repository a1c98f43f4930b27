"""Values handed to a secret store: whatever their names, the store's format says they are secrets.

A Kubernetes `Secret` holds its values under `data` (base64) and `stringData` (plain) with keys the user
chose (`STRIPE: <key>`, `config.json: <base64>`), which no credential-name rule reads: an agent writes such
manifests, applies them and reads them back (`kubectl get secret -o yaml` / `-o json`). Here the object's
`kind: Secret` says what the values are, in YAML (raw, after a tool's line numbers, or escaped in a tool
result: `lines_at` has the JSON-string step decode it) and in JSON. The command lines that hand a value to a
store say so the same way: `kubectl create secret ... --from-literal=KEY=VALUE`, `aws secretsmanager ...
--secret-string VALUE`, `aws ssm put-parameter --type SecureString --value VALUE`, and any CLI's `secret set` /
`secrets set` with a value flag (`gh secret set NAME --body
VALUE`, `az keyvault secret set ... --value VALUE`) or `NAME=VALUE` words (`supabase secrets set NAME=VALUE`).

Not taken: a `ConfigMap`'s data (`kind` says it is not secret), a value that is a template's reference
(`{{ .Values.db.password | b64enc }}`, `${DB_PASSWORD}`) or a placeholder's name (`--body VALUE`), one that is
clearly no secret (`eu`, `production`), `--from-file` (a path).
"""

from __future__ import annotations

import bisect
import json
import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import is_non_secret_value
from ctxtap.redaction.names import LINE_NUMBER
from ctxtap.redaction.spans import PRIORITY_ASSIGNMENT, Span

KIND = "generic-secret"
TRIGGERS: tuple[Trigger, ...] = (
    # YAML: raw, or a file escaped in a JSON string (`lines_at` has the JSON-string step open it)
    Trigger(rb"kind:[ \t]*(?:\\{0,3}[\"'])?Secret(?:\\{0,3}[\"'])?[ \t]*(?:\r?\n|\\{1,3}r?\\{0,3}n|$)",
            literals=(b"kind:",), window=40, opens=False),
    Trigger(rb"\"kind\"[ \t]*:[ \t]*\"Secret\"", literals=(b'"kind"',), window=40),  # JSON
    # command lines; the value follows the match
    Trigger(rb"--from-literal[ \t=]|--secret-string[ \t=]|secrets?(?:[ \t]+|:)set[ \t]|--type[ \t=]+SecureString",
            literals=(b"--from-literal", b"--secret-string", b"secret", b"securestring"), window=40, fold_literals=True),
)
_REACH = 1 << 16  # how far a manifest's document runs either side of its `kind`
_DOC_BREAK_RE = re.compile(rb"(?:^|\n)---[^\n]*(?:\n|$)")
# a line's indentation and key, after a tool's line number if any (`    12→`, `12\t`, `12:`)
_NUMBER = rb"(?:" + LINE_NUMBER + rb" ?)?"
_LINE_RE = re.compile(_NUMBER + rb"(?P<indent>[ ]*)(?P<rest>[^\r\n]*)")
_BLOCK_LINE_RE = re.compile(  # a `data:` or `stringData:` line, after a tool's line number if any
    rb"(?m)^" + _NUMBER + rb"(?P<indent>[ ]*)(?:data|stringData):[ \t]*(?:#[^\r\n]*)?\r?$")
_MEMBER_RE = re.compile(rb"(?P<key>[\"']?[A-Za-z0-9_.\-]{1,253}[\"']?):[ \t]+(?P<v>\S.*?)[ \t]*$")
_BLOCK_SCALAR_RE = re.compile(rb"[|>][+\-]?[1-9]?$")
# a template's reference anywhere in a value (one at its start, `$TOKEN`, `<token>`, is_non_secret_value's)
_REFERENCE_RE = re.compile(rb"\{\{|\$\{|\$\(|%\{|<%")
_PLACEHOLDER_NAME_RE = re.compile(rb"[A-Z][A-Z_]*")  # `--body VALUE`, `NAME=TOKEN`: a placeholder's name, in docs


def _no_value(value: bytes) -> bool:
    """A template's reference, a placeholder's name, or clearly no secret (`eu`, `production`, `changeme`)."""
    return (not value or _REFERENCE_RE.search(value) is not None or _PLACEHOLDER_NAME_RE.fullmatch(value) is not None
            or is_non_secret_value(value, True, b"secret"))
_JSON_BUDGET = 4  # bytes parsed as JSON per byte of the body, at most (a body of `"kind": "Secret"` repeated)
_OBJECT_TRIES = 8  # `{` before a JSON hit tried as the start of the object holding it
# a shell word: single-quoted, double-quoted (escapes inside), or bare
_WORD_RE = re.compile(rb"'(?P<sq>[^'\r\n]{1,4096})'|\"(?P<dq>(?:\\.|[^\"\\\r\n]){1,4096})\"|(?P<bv>[^\s\"'`;&|()<>]{1,4096})")
# each command form, read back from its trigger's end to the start of its line
_FROM_LITERAL_RE = re.compile(rb"\bkubectl\b[^\n]*\bcreate[ \t]+secret\b[^\n]*--from-literal[ \t=]$")
_SECRET_STRING_RE = re.compile(rb"\baws\b[^\n]*\bsecretsmanager\b[^\n]*--secret-string[ \t=]$")
_SECRET_SET_RE = re.compile(rb"secrets?(?:[ \t]+|:)set[ \t]$")  # any CLI's: gh, az keyvault, supabase, doppler
_ASSIGNED_RE = re.compile(rb"(?:^|[ \t]+)[A-Za-z_][A-Za-z0-9_.:\-]{0,127}=")  # `secrets set NAME=VALUE`
_COMMAND_REACH = 512  # how far a command's start lies before its flag, and its value flag after its name
_VALUE_FLAG_RE = re.compile(rb"(?:^|[ \t])(?:--body|-b|--value)(?:=|[ \t]+)")
_SSM_VALUE_RE = re.compile(rb"[ \t]--value(?:=|[ \t]+)")
_LITERAL_KEY_RE = re.compile(rb"(?P<q>[\"']?)[A-Za-z0-9_.\-]{1,253}=")


def find_secret_store_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append the values of Kubernetes Secrets (YAML `hits[0]`, JSON `hits[1]`) and of store commands (`hits[2]`)."""
    breaks = [m.span() for m in _DOC_BREAK_RE.finditer(data)] if hits[0] else []  # once per body: bisected
    done = -1
    for _, end in hits[0]:
        if end > done:
            done = _yaml_secret(data, end, breaks, out)
    budget = [_JSON_BUDGET * len(data) + (1 << 20)]
    done = -1
    for _, end in hits[1]:
        if end > done:
            done = _json_secret(data, end, out, budget)
    for _, end in hits[2]:
        _command_value(data, end, out)


def escaped_manifests(data: bytes, hits: TriggerHits) -> list[int]:
    """Where a `kind: Secret` line ends in an escaped newline: a manifest inside a JSON string, to open."""
    return [end - 1 for _, end in hits[0] if data[end - 1 : end] == b"n" and data[end - 2 : end - 1] == b"\\"]


def _yaml_secret(data: bytes, at: int, breaks: list[tuple[int, int]], out: list[Span]) -> int:
    """The values under `data:`/`stringData:` in the YAML document holding `kind: Secret` at `at` (`breaks`: each
    `---` line's span); the document's end."""
    k = bisect.bisect_right(breaks, (at, at))
    start = max(breaks[k - 1][1] if k else 0, at - _REACH)
    stop = min(breaks[k][0] if k < len(breaks) else len(data), at + _REACH)  # up to the next `---`
    for block in _BLOCK_LINE_RE.finditer(data, start, stop):
        members = _lines(data, block.end() + 1, stop, len(block.group("indent")))
        j = 0
        while j < len(members):
            member = members[j]
            j += 1
            m = _MEMBER_RE.match(member.group("rest"))
            if m is None:
                continue
            if _BLOCK_SCALAR_RE.match(m.group("v")):  # `key: |` then the value's lines, indented deeper
                inner = len(member.group("indent"))
                first = j
                while j < len(members) and (not members[j].group("rest").strip()
                                            or len(members[j].group("indent")) > inner):
                    j += 1
                body = [ln for ln in members[first:j] if ln.group("rest").strip()]
                if body:
                    out.append(Span(body[0].start("rest"), body[-1].end("rest"), KIND, PRIORITY_ASSIGNMENT))
                continue
            value_start = member.start("rest") + m.start("v")
            value = m.group("v")
            if value[:1] in (b'"', b"'") and value[-1:] == value[:1] and len(value) >= 2:
                value, value_start = value[1:-1], value_start + 1
            if not _no_value(value):
                out.append(Span(value_start, value_start + len(value), KIND, PRIORITY_ASSIGNMENT))
    return stop


def _lines(data: bytes, pos: int, stop: int, depth: int) -> list[re.Match[bytes]]:
    """The lines from `pos` to `stop` indented deeper than `depth` (blank and comment lines too), each its
    indentation and the rest (a tool's line number read past): a block's members, up to its end."""
    lines = []
    while pos < stop:
        m = _LINE_RE.match(data, pos, stop)
        assert m is not None  # everything in it is optional
        rest = m.group("rest").lstrip()
        if rest and not rest.startswith(b"#") and len(m.group("indent")) <= depth:
            break
        lines.append(m)
        pos = m.end() + 1
    return lines


def _json_secret(data: bytes, at: int, out: list[Span], budget: list[int]) -> int:
    """The values under `data`/`stringData` of the JSON object holding `"kind": "Secret"` at `at`; where to go on."""
    pos = at
    for _ in range(_OBJECT_TRIES):
        pos = data.rfind(b"{", max(0, at - _REACH), pos)
        if pos < 0 or budget[0] <= 0:
            return at
        try:
            text = data[pos : pos + 2 * _REACH].decode("utf-8", "surrogateescape")  # a cut character stays a byte
            obj, length = json.JSONDecoder().raw_decode(text)
        except ValueError:
            budget[0] -= min(len(data) - pos, 2 * _REACH)
            continue
        end = pos + len(text[:length].encode("utf-8", "surrogateescape"))
        budget[0] -= end - pos
        if end < at:
            continue  # an object before the hit's own (`"metadata": {...}` closed before `"kind"`)
        for store in _secret_objects(obj):
            for value in store:
                _json_value(data, pos, end, value, out)
        return end
    return at


def _secret_objects(obj: object) -> list[list[str]]:
    """The string values under `data` and `stringData` of every object whose kind is Secret, at any depth."""
    found: list[list[str]] = []
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("kind") == "Secret":
                for key in ("data", "stringData"):
                    members = item.get(key)
                    if isinstance(members, dict):
                        found.append([v for v in members.values() if isinstance(v, str) and not _no_value(v.encode())])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _json_value(data: bytes, lo: int, hi: int, value: str, out: list[Span]) -> None:
    """Every place in `data[lo:hi]` where `value` is written as a JSON string."""
    for ascii_only in (True, False) if not value.isascii() else (True,):
        encoded = json.dumps(value, ensure_ascii=ascii_only)[1:-1].encode("utf-8", "surrogateescape")
        needle = b'"' + encoded + b'"'
        at = data.find(needle, lo, hi)
        while at >= 0:
            out.append(Span(at + 1, at + 1 + len(encoded), KIND, PRIORITY_ASSIGNMENT))
            at = data.find(needle, at + len(needle), hi)


def _command_value(data: bytes, end: int, out: list[Span]) -> None:
    """The value a store command is given: after `--from-literal=KEY=`, `--secret-string`, or the `--body`/`-b`/
    `--value` flag of `gh secret set` and `az keyvault secret set`."""
    floor = max(0, end - _COMMAND_REACH)
    before = data[data.rfind(b"\n", floor, end) + 1 or floor : end]  # its line, or the reach of it
    if _FROM_LITERAL_RE.search(before):
        m = _LITERAL_KEY_RE.match(data, end)
        if m is not None:
            _word_at(data, m.end(), out, quote=m.group("q"))
    elif _SECRET_STRING_RE.search(before):
        _word_at(data, end, out)
    elif before.endswith(b"SecureString"):  # `aws ssm put-parameter ... --type SecureString ... --value VALUE`
        lo = data.rfind(b"\n", floor, end) + 1 or floor
        hi = data.find(b"\n", end, end + _COMMAND_REACH)
        line = (lo, min(len(data), end + _COMMAND_REACH) if hi < 0 else hi)
        if b"ssm" in data[line[0] : end] and (flag := _SSM_VALUE_RE.search(data, *line)) is not None:
            _word_at(data, flag.end(), out)
    elif _SECRET_SET_RE.search(before):
        line_end = data.find(b"\n", end, end + _COMMAND_REACH)
        stop = min(len(data), end + _COMMAND_REACH) if line_end < 0 else line_end
        flag = _VALUE_FLAG_RE.search(data, end, stop)
        if flag is not None:
            _word_at(data, flag.end(), out)
        else:  # `supabase secrets set NAME=VALUE OTHER=VALUE`: the words right after `set`, one by one
            pos = end - 1
            while (assigned := _ASSIGNED_RE.match(data, pos, stop)) is not None:
                word = _WORD_RE.match(data, assigned.end())
                _word_at(data, assigned.end(), out)
                pos = word.end() if word is not None else assigned.end()


def _word_at(data: bytes, at: int, out: list[Span], quote: bytes = b"") -> None:
    """The shell word at `at` (quoted or bare) as a secret, unless it is a reference (`$TOKEN`, `"$(cat f)"`)."""
    if quote:  # `--from-literal="KEY=value"`: the quote opened before the key
        close = data.find(quote, at, at + 4096)
        if close > at and not _no_value(data[at:close]):
            out.append(Span(at, close, KIND, PRIORITY_ASSIGNMENT))
        return
    m = _WORD_RE.match(data, at)
    if m is None or data[at : at + 1] == b"\\":
        return  # `--body \"...\"` in a JSON string: read where the string is decoded
    group = next(g for g in ("sq", "dq", "bv") if m.group(g) is not None)
    value = m.group(group)
    if not _no_value(value) and value != b"-":
        out.append(Span(m.start(group), m.end(group), KIND, PRIORITY_ASSIGNMENT))


DETECTOR = Detector(
    "secret-stores",
    TRIGGERS,
    find_secret_store_spans,
    lines_at=escaped_manifests,
    examples=samples(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: payments\nstringData:\n  STRIPE: <alnum:24>\n",
        "apiVersion: v1\ndata:\n  config.json: <b64:40>\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\n",
        '{"apiVersion": "v1", "data": {"token": "<b64:32>"}, "kind": "Secret", "metadata": {"name": "x"}}',
        "kubectl create secret generic payments --from-literal=STRIPE=<alnum:24>",
        "gh secret set DEPLOY_KEY --body <alnum:32>",
        "supabase secrets set STRIPE=<alnum:24> REGION=eu",
        "aws secretsmanager create-secret --name prod/stripe --secret-string <alnum:28>",
        "aws ssm put-parameter --name /prod/stripe --value <alnum:24> --type SecureString --overwrite",
    ),
    near_misses=samples(
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  region: eu-west-1\n  mode: production\n",
        "kind: Secret\nstringData:\n  password: {{ .Values.db.password | quote }}\n  user: ${DB_USER}\n",
        "kind: Secret\nmetadata:\n  name: x\n---\nkind: ConfigMap\ndata:\n  mode: <alnum:20>\n",  # the next document's
        "kubectl create secret generic tls --from-file=tls.crt=cert.pem",
        "gh secret set DEPLOY_KEY < key.txt",
        "aws ssm put-parameter --name /prod/region --type String --value eu-west-1",
    ),
)
