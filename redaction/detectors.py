"""Credentials recognisable by their format alone: provider keys, tokens, PEM blocks.

Speed matters here (every recorded body goes through this), and Python's `re`
is slow when one big alternation is tried at every byte. So the scan works in
two steps:

1. Candidate tokens: runs of at least 16 `[A-Za-z0-9_-]` that start after a
   real delimiter are found with `bytes.translate` + `bytes.find`, which run
   at memory speed. Runs that follow `+` or `/` are not candidates, so a
   megabyte of base64 image data costs one candidate, not thousands.
2. Each candidate is tried against the token formats with one anchored
   `match`, gated by its first three bytes.

Formats that are not a single token (PEM blocks, URL passwords, webhook URLs,
SAS signatures) have their own regexes, each starting with a literal so `re`
can skip to it quickly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from redaction.spans import PRIORITY_CONTEXT, PRIORITY_FORMAT, Span

TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_NOT_TOKEN = rb"(?![A-Za-z0-9_\-])"


@dataclass(frozen=True)
class TokenFormat:
    """One credential format recognisable on its own.

    `prefixes` are the possible first three bytes, which gate the
    regex; a format without prefixes is only tried where a token follows
    `.`, `~` or `:` (JWT-like and Discord-like shapes).
    """

    kind: str
    pattern: bytes
    prefixes: tuple[bytes, ...] = ()


# Order matters where formats share a prefix: the first that matches wins.
TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    TokenFormat("anthropic-key", rb"sk-ant-[a-z]{2,8}[0-9]{0,3}-[A-Za-z0-9_\-]{20,}", (b"sk-",)),
    TokenFormat("openrouter-key", rb"sk-or-v[0-9]-[A-Za-z0-9]{32,}", (b"sk-",)),
    TokenFormat(
        "openai-key",
        rb"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9_\-]{10,}T3BlbkFJ[A-Za-z0-9_\-]{10,}",
        (b"sk-",),
    ),
    # DeepSeek, Moonshot/Kimi, older OpenAI and many OpenAI-compatible providers.
    TokenFormat("sk-key", rb"sk-[A-Za-z0-9]{32,}", (b"sk-",)),
    TokenFormat("xai-key", rb"xai-[A-Za-z0-9]{40,}", (b"xai",)),
    TokenFormat("groq-key", rb"gsk_[A-Za-z0-9]{40,}", (b"gsk",)),
    TokenFormat("perplexity-key", rb"pplx-[A-Za-z0-9]{40,}", (b"ppl",)),
    TokenFormat("cerebras-key", rb"csk-[A-Za-z0-9]{40,}", (b"csk",)),
    TokenFormat("fireworks-key", rb"fw_[A-Za-z0-9]{20,}", (b"fw_",)),
    TokenFormat("replicate-token", rb"r8_[A-Za-z0-9]{30,}", (b"r8_",)),
    TokenFormat("tavily-key", rb"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}", (b"tvl",)),
    TokenFormat("langsmith-key", rb"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", (b"lsv",)),
    TokenFormat("huggingface-token", rb"hf_[A-Za-z0-9]{30,}", (b"hf_",)),
    TokenFormat("google-api-key", rb"AIza[0-9A-Za-z_\-]{35}", (b"AIz",)),
    TokenFormat("google-oauth-token", rb"ya29\.[0-9A-Za-z_\-]{20,}", (b"ya2",)),
    TokenFormat("google-client-secret", rb"GOCSPX-[0-9A-Za-z_\-]{20,}", (b"GOC",)),
    TokenFormat(
        "aws-access-key",
        rb"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
        (b"A3T", b"AKI", b"ASI", b"ABI", b"ACC"),
    ),
    TokenFormat(
        "github-token",
        rb"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}",
        (b"ghp", b"gho", b"ghu", b"ghs", b"ghr", b"git"),
    ),
    TokenFormat(
        "gitlab-token",
        rb"gl(?:pat|dt|ptt|rt|cbt|imt|ft|soat|ffct|agent|oas)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,}",
        (b"glp", b"gld", b"glr", b"glc", b"gli", b"glf", b"gls", b"gla", b"glo", b"GR1"),
    ),
    TokenFormat(
        "slack-token", rb"xox[abposrce]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,}", (b"xox", b"xap")
    ),
    TokenFormat(
        "stripe-key",
        rb"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9]{24,}",
        (b"sk_", b"rk_", b"whs"),
    ),
    TokenFormat("jwt", rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", (b"eyJ",)),
    TokenFormat("npm-token", rb"npm_[A-Za-z0-9]{36}", (b"npm",)),
    TokenFormat("pypi-token", rb"pypi-AgE[A-Za-z0-9_\-]{50,}", (b"pyp",)),
    TokenFormat("sendgrid-key", rb"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", (b"SG.",)),
    TokenFormat(
        "twilio-key", rb"SK[0-9a-fA-F]{32}", tuple(b"SK" + bytes([c]) for c in b"0123456789abcdefABCDEF")
    ),
    TokenFormat("digitalocean-token", rb"do[opr]_v1_[a-f0-9]{64}", (b"doo", b"dop", b"dor")),
    TokenFormat("shopify-token", rb"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", (b"shp",)),
    TokenFormat("linear-key", rb"lin_(?:api|oauth)_[A-Za-z0-9]{40}", (b"lin",)),
    TokenFormat("notion-token", rb"ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43}", (b"ntn", b"sec")),
    TokenFormat("vault-token", rb"hv[sbr]\.[A-Za-z0-9_\-]{24,}", (b"hvs", b"hvb", b"hvr")),
    TokenFormat("doppler-token", rb"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", (b"dp.",)),
    TokenFormat("docker-hub-token", rb"dckr_pat_[A-Za-z0-9_\-]{20,}", (b"dck",)),
    TokenFormat(
        "grafana-token", rb"glc_[A-Za-z0-9]{32,}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", (b"glc", b"gls")
    ),
    TokenFormat("sentry-token", rb"sntry[su]_[A-Za-z0-9_+/=\-]{40,}", (b"snt",)),
    TokenFormat("supabase-key", rb"sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,}", (b"sbp", b"sb_")),
    TokenFormat("postman-key", rb"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", (b"PMA",)),
    TokenFormat("age-secret-key", rb"AGE-SECRET-KEY-1[0-9A-Z]{58}", (b"AGE",)),
    TokenFormat("databricks-token", rb"dapi[a-f0-9]{32}(?:-[0-9])?", (b"dap",)),
    TokenFormat("atlassian-token", rb"ATATT3[A-Za-z0-9_=\-]{100,}", (b"ATA",)),
    TokenFormat("mailgun-key", rb"key-[0-9a-f]{32}", (b"key",)),
    TokenFormat("square-token", rb"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}", (b"sq0",)),
    TokenFormat("heroku-key", rb"HRKU-[A-Za-z0-9_\-]{40,}", (b"HRK",)),
    TokenFormat("pulumi-token", rb"pul-[a-f0-9]{40}", (b"pul",)),
    TokenFormat("onepassword-token", rb"ops_eyJ[A-Za-z0-9_\-]{50,}", (b"ops",)),
    # Shapes without a literal prefix: only tried around `.`, `~` and `:`.
    TokenFormat("telegram-bot-token", rb"(?:bot)?(?P<secret_tg>[0-9]{8,10}:AA[A-Za-z0-9_\-]{33})"),
    TokenFormat("discord-token", rb"[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"),
)

TOKEN_KINDS: tuple[str, ...] = tuple(dict.fromkeys(f.kind for f in TOKEN_FORMATS))
CONTEXT_KINDS: tuple[str, ...] = (
    "private-key",
    "gcp-sa-key",
    "slack-webhook",
    "discord-webhook",
    "url-password",
    "azure-client-secret",
    "azure-sas-signature",
)


def _compile(formats: list[tuple[int, TokenFormat]]) -> re.Pattern[bytes]:
    branches = [rb"(?P<f%d>(?:%s)%s)" % (i, f.pattern, _NOT_TOKEN) for i, f in formats]
    return re.compile(b"|".join(branches))


_PREFIXED = [(i, f) for i, f in enumerate(TOKEN_FORMATS) if f.prefixes]
_SHAPED = [(i, f) for i, f in enumerate(TOKEN_FORMATS) if not f.prefixes]
_PREFIXED_RE = _compile(_PREFIXED)
_SHAPED_RE = _compile(_SHAPED)
_PREFIX3 = frozenset(p for f in TOKEN_FORMATS for p in f.prefixes)
assert all(len(p) == 3 for p in _PREFIX3), "token format prefixes are three bytes"
_KIND_BY_GROUP = {f"f{i}": f.kind for i, f in enumerate(TOKEN_FORMATS)}

MIN_RUN = 16
_RUN_NEEDLE = b" " + b"a" * MIN_RUN


def _run_table() -> bytes:
    table = bytearray(b" " * 256)
    for c in TOKEN_CHARS:
        table[c] = ord("a")
    # Base64 continues through these; a run right after one is inside a blob.
    table[ord("+")] = ord("p")
    table[ord("/")] = ord("p")
    return bytes(table)


_RUN_TABLE = _run_table()
_IS_TOKEN_CHAR = [c in TOKEN_CHARS for c in range(256)]
_HEX = frozenset(b"0123456789abcdefABCDEF")
_EXT_DELIMS = frozenset(b".~:")
_JSON_ESCAPE_LETTERS = frozenset(b"nrtbf")
_SPECIAL_BEFORE = frozenset(b"\\%.~:")  # escapes and dotted formats need a closer look


def _match_at(data: bytes, pos: int) -> re.Match[bytes] | None:
    if data[pos : pos + 3] in _PREFIX3:
        return _PREFIXED_RE.match(data, pos)
    return None


def _skip_escape(data: bytes, start: int) -> int | None:
    """Where a token really starts if the run at `start` begins with an escape's tail.

    `\\nghp_...` inside a JSON string is the run `nghp_...`; `%3Dsk-...` in a
    form body is `3Dsk-...`; `\\u0022sk-...` is `u0022sk-...`.
    """
    if start == 0:
        return None
    before = data[start - 1]
    if before == 0x5C:  # backslash
        first = data[start]
        if first in _JSON_ESCAPE_LETTERS:
            return start + 1
        if first == 0x75 and all(c in _HEX for c in data[start + 1 : start + 5]):  # u0022
            return start + 5
    elif before == 0x25 and all(c in _HEX for c in data[start : start + 2]):  # %3D
        return start + 2
    return None


def _match_special(data: bytes, start: int) -> re.Match[bytes] | None:
    """The run at `start` follows an escape or a `.`/`~`/`:`: look through it."""
    skipped = _skip_escape(data, start)
    if skipped is not None:
        m = _match_at(data, skipped)
        if m is not None:
            return m
    if data[start - 1] in _EXT_DELIMS:
        return _match_extended(data, start)
    return None


def _match_extended(data: bytes, start: int) -> re.Match[bytes] | None:
    """Formats with a `.`/`~`/`:` inside (ya29., SG., JWT, telegram): walk back to their start."""
    pos = start - 1  # on the delimiter
    for _ in range(3):
        seg = pos
        while seg > 0 and _IS_TOKEN_CHAR[data[seg - 1]] and pos - seg < 28:
            seg -= 1
        if seg == pos:
            return None
        for begin in (seg, _skip_escape(data, seg)):
            if begin is None:
                continue
            m = _match_at(data, begin) or _SHAPED_RE.match(data, begin)
            if m is not None and m.end() > start:
                return m
        if seg == 0 or data[seg - 1] not in _EXT_DELIMS:
            return None
        pos = seg - 1
    return None


def _span_of(m: re.Match[bytes]) -> Span:
    group = m.lastgroup or ""
    kind = _KIND_BY_GROUP.get(group, "secret")
    start, end = m.span()
    if kind == "telegram-bot-token":
        start, end = m.span("secret_tg")
    return Span(start, end, kind, PRIORITY_FORMAT)


def find_token_spans(data: bytes, out: list[Span]) -> None:
    """Append spans of provider keys and tokens recognised by format."""
    runs = b" " + data.translate(_RUN_TABLE)
    find = runs.find
    prefixed_match = _PREFIXED_RE.match
    pos = find(_RUN_NEEDLE)
    while pos >= 0:
        # runs[pos] is the delimiter before the run; the run starts at data[pos].
        m = prefixed_match(data, pos) if data[pos : pos + 3] in _PREFIX3 else None
        if m is None and pos and data[pos - 1] in _SPECIAL_BEFORE:
            m = _match_special(data, pos)
        if m is not None:
            out.append(_span_of(m))
            pos = find(_RUN_NEEDLE, max(m.end(), pos + MIN_RUN + 1))
        else:
            pos = find(_RUN_NEEDLE, pos + MIN_RUN + 1)


# --- formats that are not one token --------------------------------------------------

_PEM_LABEL = rb"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = rb"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
# Newlines may be real, `\n` (JSON) or `\\n` (JSON inside JSON). The body may hold
# `Proc-Type:`/`DEK-Info:` headers but never `-----`, so it cannot run past
# the next BEGIN (which would make many BEGIN lines quadratic). Without an
# END (a truncated key), the base64 lines after BEGIN are taken.
_PEM_RE = re.compile(
    _PEM_LABEL
    + rb"(?:(?:[A-Za-z0-9+/=\s\\:,._()]|-(?!----)){0,65536}?"
    + _PEM_END
    + rb"|(?:(?:\s|\\+[nr])+[A-Za-z0-9+/=:,\-]{16,}(?=\s|\\|$|\"))+)"
)
_GCP_BEFORE_RE = re.compile(rb'private_key\\*"\s*:\s*\\*"$')

_URL_RE = re.compile(
    rb"://(?:"
    rb"(?P<slack>hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<slack_v>[A-Za-z0-9_/+\-]{20,})"
    rb"|(?P<discord>(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,}/)(?P<discord_v>[A-Za-z0-9_\-]{20,})"
    rb"|[^\s/?#@:\"'\\<>()\[\]{}]{0,256}:(?P<pw>[^\s/?#\"'\\<>()\[\]{}]{1,256})@"
    rb")"
)
_SIG_RE = re.compile(rb"sig=([A-Za-z0-9%+/=]{20,})")
# Entra ID (Azure AD) client secrets: `abc8Q~` then 31-34 chars; `.` and `~` split them into short runs.
_AZURE_MARK_RE = re.compile(rb"Q~")
_DIGITS = frozenset(b"0123456789")
_AZURE_SECRET_RE = re.compile(rb"[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])")
_AZURE_SECRET_CHARS = frozenset(TOKEN_CHARS + b"~.")
_PLACEHOLDER_PASSWORDS = frozenset(
    b"password passwd pass pw pwd secret changeme example xxx xxxx xxxxx xxxxxx *** ****"
    b" ***** ****** ******** your-password yourpassword your_password mypassword".split()
)


def find_context_spans(data: bytes, out: list[Span]) -> None:
    """Append spans of PEM private keys, URL passwords, webhook URLs and SAS signatures."""
    for m in _PEM_RE.finditer(data):
        kind = "private-key"
        if _GCP_BEFORE_RE.search(data, max(0, m.start() - 40), m.start()):
            kind = "gcp-sa-key"
        out.append(Span(m.start(), m.end(), kind, PRIORITY_FORMAT))
    for m in _URL_RE.finditer(data):
        if m.group("slack_v") is not None:
            out.append(Span(*m.span("slack_v"), "slack-webhook", PRIORITY_FORMAT))
        elif m.group("discord_v") is not None:
            out.append(Span(*m.span("discord_v"), "discord-webhook", PRIORITY_FORMAT))
        else:
            password = m.group("pw")
            if not is_placeholder_password(password):
                out.append(Span(*m.span("pw"), "url-password", PRIORITY_CONTEXT))
    for m in _AZURE_MARK_RE.finditer(data):
        start = m.start() - 4  # three characters and a digit come before `Q~`
        if start < 0 or data[start + 3] not in _DIGITS or _glued_before(data, start):
            continue
        found = _AZURE_SECRET_RE.match(data, start)
        if found is not None:
            out.append(Span(found.start(), found.end(), "azure-client-secret", PRIORITY_FORMAT))
    for m in _SIG_RE.finditer(data):
        if m.start() > 0 and data[m.start() - 1] in b"?&;":
            out.append(Span(*m.span(1), "azure-sas-signature", PRIORITY_CONTEXT))


def _glued_before(data: bytes, start: int) -> bool:
    """Is the byte before `start` part of the same word (not a delimiter, not the `n` of `\\n`)?"""
    if start == 0 or data[start - 1] not in _AZURE_SECRET_CHARS:
        return False
    return _skip_escape(data, start - 1) != start


def is_placeholder_password(password: bytes) -> bool:
    """`user:password@`, `:${DB_PASS}@`, `:<pw>@` and `:****@` in docs are not secrets."""
    if password.lower() in _PLACEHOLDER_PASSWORDS:
        return True
    return password[:1] in (b"$", b"<", b"{", b"[") or not password.strip(b"*xX")
