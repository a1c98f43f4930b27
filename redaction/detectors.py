"""Credentials recognisable by their format alone: provider keys, tokens, PEM blocks.

Speed matters here (every recorded body goes through this), so nothing in
this module scans a body: `redaction.engine` finds where each format's
trigger matches (one Hyperscan pass for all rules), and the functions here
only verify those places:

1. Token formats: the trigger is the format itself; the verifier checks the
   token starts after a real delimiter (or right after a JSON/percent escape
   such as `\\n` or `%3D`), not inside a longer run and not inside base64
   (a token right after `+` or `/` counts only if it has a character base64
   lacks), then matches the full format with a token boundary after it.
2. Formats that are not a single token (PEM blocks, URL passwords, webhook
   URLs with or without their scheme, SAS signatures, Entra ID secrets) have
   a literal trigger and a regex anchored there.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ctxtap.redaction import url_credentials
from ctxtap.redaction.detector import Detector, Hit, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import decoded_text, is_non_secret_password
from ctxtap.redaction.openers import alternatives
from ctxtap.redaction.spans import PRIORITY_CONTEXT, PRIORITY_FORMAT, Span

TOKEN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_NOT_TOKEN = rb"(?![A-Za-z0-9_\-])"


@dataclass(frozen=True)
class TokenFormat:
    """One credential format recognisable on its own.

    `prefixes` are the possible first three bytes, which gate the
    regex; a format without prefixes is only tried where a token follows
    `.`, `~` or `:` (JWT-like and Discord-like shapes), or where its own
    `trigger` matched. A prefixed format's `trigger` replaces the one made
    from its pattern (Hyperscan has no lookaround).
    """

    kind: str
    pattern: bytes
    prefixes: tuple[bytes, ...] = ()
    trigger: bytes | None = None  # a shape without prefixes found by its own trigger (match start reported)


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
    # Google's OAuth refresh tokens (gcloud's and every installed app's `refresh_token`)
    TokenFormat("google-refresh-token", rb"1//0[0-9A-Za-z_\-]{40,}", (b"1//",)),
    # Firebase Cloud Messaging's legacy server keys: the key's id, then the key
    TokenFormat("firebase-server-key", rb"AAAA[0-9A-Za-z_\-]{7}:APA91b[0-9A-Za-z_\-]{100,}", (b"AAA",)),
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
    # Header `{"...` in base64url, then any payload (JSON or not), signature optional (`alg: none`).
    TokenFormat("jwt", rb"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*)?", (b"eyJ",)),
    TokenFormat("npm-token", rb"npm_[A-Za-z0-9]{36}", (b"npm",)),
    TokenFormat("pypi-token", rb"pypi-AgE[A-Za-z0-9_\-]{50,}", (b"pyp",)),
    TokenFormat("sendgrid-key", rb"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", (b"SG.",)),
    # Twilio API key SIDs (`SK` + 32) and account SIDs (`AC` + 32), as detect-secrets knows them.
    TokenFormat(
        "twilio-key",
        rb"SK[0-9a-fA-F]{32}|SK[0-9a-z]{32}|AC[0-9a-z]{32}",
        tuple(p + bytes([c]) for p in (b"SK", b"AC") for c in b"0123456789abcdefghijklmnopqrstuvwxyz")
        + tuple(b"SK" + bytes([c]) for c in b"ABCDEF"),
    ),
    # JFrog Artifactory API keys (`AKC...`, gitleaks' kind) and encrypted passwords (`AP[0-9A-F]...`).
    TokenFormat("artifactory-api-key", rb"AKC[A-Za-z0-9]{10,}", (b"AKC",)),
    TokenFormat(
        "artifactory-password",
        # after `APA`..`APF` a digit or an all-lowercase tail, so `APDUResponseHandler` is not one
        rb"AP[0-9][A-Za-z0-9]{10,}|AP[A-F](?=[A-Za-z]*[0-9]|[a-z0-9]{10,}(?![A-Za-z0-9]))[A-Za-z0-9]{10,}",
        tuple(b"AP" + bytes([c]) for c in b"0123456789ABCDEF"),
        trigger=rb"AP[0-9A-F][A-Za-z0-9]{10}",
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
    # Formats gitleaks has no rule for (model providers and infrastructure agents use).
    TokenFormat("nvidia-key", rb"nvapi-[A-Za-z0-9_\-]{60,}", (b"nva",)),
    TokenFormat("pinecone-key", rb"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}", (b"pcs",)),
    TokenFormat(
        "tailscale-key",
        rb"tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}",
        (b"tsk",),
    ),
    TokenFormat("together-key", rb"tgp_v1_[A-Za-z0-9_\-]{40,}", (b"tgp",)),
    TokenFormat("langfuse-key", rb"sk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", (b"sk-",)),
    TokenFormat("elevenlabs-key", rb"sk_[a-f0-9]{48}", (b"sk_",)),
    # gitleaks knows New Relic keys only next to a `new_relic` name; their prefixes say enough.
    TokenFormat(
        "new-relic-key",
        rb"NRAK-[A-Z0-9]{27}|NRAA-[a-f0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}",
        (b"NRA", b"NRJ", b"NRI"),
    ),
    # Shapes without a literal prefix: only tried around `.`, `~` and `:`.
    TokenFormat("telegram-bot-token", rb"(?:bot)?(?P<secret_tg>[0-9]{8,10}:AA[A-Za-z0-9_\-]{33})"),
    TokenFormat("discord-token", rb"[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"),
    # Mailchimp API keys: 32 hex-like characters and the datacentre (`-us21`).
    TokenFormat("mailchimp-key", rb"[0-9a-z]{32}-us[0-9]{1,2}", trigger=rb"[0-9a-z]{32}-us[0-9]"),
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
    "softlayer-api-key",
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

_TOKEN_BYTES = frozenset(TOKEN_CHARS)


def _literal_head(pattern: bytes) -> bytes:
    """The fixed bytes a format's pattern begins with (`sk-ant-`, `github_pat_`)."""
    n = 0
    while n < len(pattern) and pattern[n] not in b"[](){}?*+|\\.^$":
        n += 1
    return pattern[:n] if n < len(pattern) and pattern[n] not in b"?*{" else pattern[: max(0, n - 1)]


# Formats whose fixed head is long enough (7+ bytes: one chance in 64^7 per place of occurring by
# accident, even in a base64url blob) to count glued to whatever comes before: `x-sk-ant-...`,
# `KEY_github_pat_...`, `Bearersk-ant-...` (a concatenation without its space).
_WORDS_GROUP_RE = re.compile(rb"\(\?:([A-Za-z0-9_\-]+(?:\|[A-Za-z0-9_\-]+)*)\)")


def _heads(pattern: bytes) -> set[bytes]:
    """The fixed heads of a pattern's alternatives, a leading group of words spelled out
    (`sk-(?:proj|admin)-...`: `sk-proj-`, `sk-admin-`)."""
    out = set()
    for alt in alternatives(pattern):
        head = _literal_head(alt)
        words = _WORDS_GROUP_RE.match(alt, len(head))
        if words is None:
            out.add(head)
            continue
        rest = alt[words.end() :]
        out.update(head + w + _literal_head(rest) for w in words.group(1).split(b"|"))
    return out


_LONG_HEADS = tuple(sorted({h for f in TOKEN_FORMATS for h in _heads(f.pattern) if len(h) >= 7}))
_HEX = frozenset(b"0123456789abcdefABCDEF")
_JSON_ESCAPE_LETTERS = frozenset(b"nrtbf")
_NOT_BASE64 = frozenset(b"_-.~:")
_NAMED_GROUP_RE = re.compile(rb"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")
_TRAILING_OPEN_RE = re.compile(rb"\{(\d+),\}(?=\||$)")


def _trigger_pattern(pattern: bytes) -> bytes:
    """The format as a Hyperscan trigger: no named groups, open-ended tails cut to their minimum
    (one report per token instead of one per extra character)."""
    return _TRAILING_OPEN_RE.sub(rb"{\1}", _NAMED_GROUP_RE.sub(b"(?:", pattern))


def token_triggers() -> list[Trigger]:
    """One trigger per token format, in `TOKEN_FORMATS` order.

    Prefixed formats do not ask Hyperscan for match starts (start-of-match
    tracking costs a fifth of the scan on base64-heavy bodies): `token_starts`
    finds the prefixes before each match end instead.
    """
    out = []
    for f in TOKEN_FORMATS:
        if f.prefixes:
            out.append(Trigger(f.trigger or _trigger_pattern(f.pattern), literals=f.prefixes, window=160))
        elif f.trigger is not None:
            out.append(Trigger(f.trigger, window=0, som=True))
        elif f.kind == "telegram-bot-token":
            out.append(Trigger(_trigger_pattern(f.pattern), literals=(b":AA",), window=40, som=True))
        else:
            # discord: a leading `[MNO]` + 23 alphanumerics is everywhere in base64, so the
            # trigger is the dotted tail; `token_starts` walks back to the token's start.
            out.append(Trigger(_DISCORD_TAIL, window=0, som=True))
    return out


_DISCORD_TAIL = rb"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}"
_DISCORD = next(i for i, f in enumerate(TOKEN_FORMATS) if f.kind == "discord-token")


def _reach(pattern: bytes) -> int:
    """How far before a trigger's end the token may start (its longest match, capped)."""
    try:
        from re import _parser  # type: ignore[attr-defined]

        return min(int(_parser.parse(_trigger_pattern(pattern)).getwidth()[1]), 4096)
    except Exception:
        return 4096


_REACH = [_reach(f.pattern) for f in TOKEN_FORMATS]


def token_starts(data: bytes, hits: TriggerHits) -> list[int]:
    """Where tokens may start, from the token triggers' hits (`hits[i]` for `TOKEN_FORMATS[i]`)."""
    starts: list[int] = []
    for i, found in enumerate(hits):
        if not found:
            continue
        f = TOKEN_FORMATS[i]
        if not f.prefixes:
            if i == _DISCORD:
                for dot, _ in found:
                    starts.extend(t for t in range(max(0, dot - 27), dot - 23) if data[t] in b"MNO")
            else:
                starts.extend(s for s, _ in found)
            continue
        # Each prefix occurrence once: hits close together share most of their reach (a body of
        # JWTs gave 640,000 starts for 14,000 tokens). Ends ascend, and so do the reaches' starts:
        # what a hit's reach holds before `searched` an earlier hit's reach held.
        searched = dict.fromkeys(f.prefixes, 0)
        for start, end in sorted(found, key=_end):
            if start >= 0:
                starts.append(start)
                continue
            lo = max(0, end - _REACH[i])
            for prefix in f.prefixes:
                pos = data.find(prefix, max(lo, searched[prefix]), end)
                while pos >= 0:
                    starts.append(pos)
                    pos = data.find(prefix, pos + 1, end)
                searched[prefix] = max(searched[prefix], end - len(prefix) + 1)
    return starts


def _end(hit: tuple[int, int]) -> int:
    return hit[1]


def after_escape(data: bytes, start: int, limit: int) -> int:
    """Where a token starts when an escape's letters begin its run (`\\nAKIA…`, `%3DAKIA…`,
    `\\u0022AKIA…`, `\\x12Get…`, `start` at the first byte after `\\` or `%`): after the escape, else `start`."""
    if start > 0 and data[start - 1] in _ESCAPE_STARTS:
        for k in (start + 1, start + 2, start + 3, start + 5):
            if k < limit and escape_before(data, k):
                return k
    return start


_ESCAPE_STARTS = frozenset(b"\\%")


def escape_before(data: bytes, start: int) -> bool:
    """Do the bytes before `start` end a JSON, percent or source-code escape (`\\n`, `\\u0022`, `%3D`,
    `\\x12` as Python, C and JavaScript write a byte)?"""
    if start >= 2 and data[start - 2] == 0x5C and data[start - 1] in _JSON_ESCAPE_LETTERS:
        return True
    if start >= 4 and data[start - 4] == 0x5C and data[start - 3] == 0x78:  # \x12
        return all(c in _HEX for c in data[start - 2 : start])
    if start >= 6 and data[start - 6] == 0x5C and data[start - 5] == 0x75:  # \u0022
        return all(c in _HEX for c in data[start - 4 : start])
    return start >= 3 and data[start - 3] == 0x25 and all(c in _HEX for c in data[start - 2 : start])


_DISCORD_RE = re.compile(TOKEN_FORMATS[_DISCORD].pattern + _NOT_TOKEN)
_DISCORD_SLACK = 4  # bytes a Discord token's first segment may run longer than its shape


def _discord_in_run(data: bytes, start: int) -> bool:
    """A Discord token a few bytes into its run (`AT` + `MyOTQ4...`): its two dotted tails are shape enough.

    The tails (6 and 27+ characters after dots) do not occur in base64, hex or
    identifiers, so a first segment a little longer than the shape's still ends in a token.
    """
    if data[start : start + 1] not in (b"M", b"N", b"O"):
        return False
    run = start
    while run > 0 and data[run - 1] in _TOKEN_BYTES:
        run -= 1
        if start - run > _DISCORD_SLACK:
            return False
    return _DISCORD_RE.match(data, start) is not None


def token_at(data: bytes, start: int) -> re.Match[bytes] | None:
    """The token format matching at `start`, if `start` is where a token can begin."""
    after_slash = False
    if start > 0:
        before = data[start - 1]
        if before in _TOKEN_BYTES:
            if (not escape_before(data, start) and not _discord_in_run(data, start)
                    and not data.startswith(_LONG_HEADS, start)):
                return None  # inside a longer run: `foo_ghp_...`
        elif before in (0x2B, 0x2F):  # `+`, `/`: maybe inside base64
            after_slash = True
    m = _PREFIXED_RE.match(data, start) if data[start : start + 3] in _PREFIX3 else None
    if m is None:
        m = _SHAPED_RE.match(data, start)
    if m is None:
        return None
    if after_slash and not any(c in _NOT_BASE64 for c in m.group()):
        return None  # a base64 blob happens to contain the shape
    return m


def _span_of(m: re.Match[bytes]) -> Span:
    group = m.lastgroup or ""
    kind = _KIND_BY_GROUP.get(group, "secret")
    start, end = m.span()
    if kind == "telegram-bot-token":
        start, end = m.span("secret_tg")
    return Span(start, end, kind, PRIORITY_FORMAT)


def find_token_spans(data: bytes, starts: list[int], out: list[Span]) -> None:
    """Append spans of provider keys and tokens whose trigger matched at `starts`."""
    covered = -1
    for start in sorted(set(starts)):
        if start < covered:
            continue
        m = token_at(data, start)
        if m is not None:
            out.append(_span_of(m))
            covered = m.end()


def find_tokens(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of the token formats (`hits[i]`: where `token_triggers()[i]` matched)."""
    find_token_spans(data, token_starts(data, hits), out)


# --- formats that are not one token --------------------------------------------------

# A block whose label names a key that is not public: `RSA PRIVATE KEY`, `PGP PRIVATE KEY BLOCK`, a secret
# key, OpenVPN's `OpenVPN Static key V1` (its body is hex). Certificates and public keys have other labels.
_PEM_KEY = rb"(?:PRIVATE KEY(?: BLOCK)?|SECRET KEY|Static key V[0-9])"
_PEM_LABEL = rb"-----BEGIN[ A-Za-z0-9]{0,40}" + _PEM_KEY + rb"-----"
_PEM_END = rb"-----END[ A-Za-z0-9]{0,40}" + _PEM_KEY + rb"-----"
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

# A private key's DER body in base64 without its BEGIN line (a file cut, a key pasted alone): the
# structure, not a label. Every private key format starts a SEQUENCE with a small version INTEGER (PKCS#1
# RSA and DSA 0, PKCS#8 0 or 1, SEC1 EC 1, PKCS#12 3); certificates, public keys and requests start
# their SEQUENCE with another SEQUENCE or a long INTEGER. In base64, by the SEQUENCE's length form
# (two length bytes, one, none): `MII..[AQgw]IBA`, `MI[E-H].AgE[ABD]`, `M[A-H].CAQ[A-H]`; OpenSSH's own
# format starts with the base64 of `openssh-key-v1`.
_DER_KEY_HEAD = (rb"(?:MII[A-Za-z0-9+/]{2}[AQgw]IB[AD]|MI[EFGH][A-Za-z0-9+/]AgE[ABD]"
                 rb"|M[A-H][AEIMQUYcgkosw048]CAQ[A-H]|b3BlbnNzaC1rZXktdjE)")
_BASE64_LINE_RE = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
_LINE_BREAK_RE = re.compile(rb"(?:\r?\n|\\+[nr])+[ \t]*")
_DER_KEY_MIN = 60  # base64 characters: the smallest key (Ed25519 in PKCS#8) is 64
_KEY_LINE_ENDS = frozenset(b"\r\n\"'`-<")  # what may follow a body's line: a break, a quote, `-----END`, a tag
_FULL_LINE = 40  # a body goes on after a line break only after a full line (PEM's are 64, MIME's 76)
_BASE64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

# Webhook URLs, with or without their scheme (`hooks.slack.com/services/...` in prose).
_SLACK_HOOK_RE = re.compile(rb"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+\-]{20,})")
_DISCORD_HOOK_RE = re.compile(
    rb"(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{5,}/(?P<v>[A-Za-z0-9_\-]{20,})"
)
# IBM SoftLayer's SOAP API takes the key in the URL path.
_SOFTLAYER_RE = re.compile(rb"(?i)api\.softlayer\.com/soap/v3(?:\.1)?/(?P<v>[a-z0-9]{64})(?![a-z0-9])")
_SIG_VALUE_RE = re.compile(rb"sig=([A-Za-z0-9%+/=]{20,})")
# Entra ID (Azure AD) client secrets: `abc8Q~` then 31-34 chars; `.` and `~` split them into short runs.
_DIGITS = frozenset(b"0123456789")
_AZURE_SECRET_RE = re.compile(rb"[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])")
_AZURE_SECRET_CHARS = frozenset(TOKEN_CHARS + b"~.")
def _pem_keys(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        m = _PEM_RE.match(data, start)
        if m is not None:
            kind = "private-key"
            if _GCP_BEFORE_RE.search(data, max(0, start - 40), start):
                kind = "gcp-sa-key"
            out.append(Span(m.start(), m.end(), kind, PRIORITY_FORMAT))


def _url_passwords(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, end in url_credentials.find_url_passwords(data, [end for _, end in found]):
        out.append(Span(start, end, "url-password", PRIORITY_CONTEXT))


def _authority_passwords(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        span = url_credentials.authority_password_at(data, start + 1)
        if span is not None:
            out.append(Span(*span, "url-password", PRIORITY_CONTEXT))


# Oracle's `user/password[@database]`, where Oracle's tools and URLs take a login: after `jdbc:oracle:thin:`, as
# the first argument of its command-line tools (`sqlplus -s scott/pw@orcl`, `rman target sys/pw@db`), after
# `userid=` (sqlldr, exp) and after SQL*Plus's `CONNECT` (there with an `@` or `AS SYSDBA` after it: `connect
# to/from` is prose). The trigger is the keyword (the user and slash after it, in the engine, cost it a
# twentieth more a byte); the user and password are read in Python, raw (`connect ` is in prose everywhere: opening
# each JSON string it is in cost the scan a thirtieth more). The password runs to `@`, a space, a quote or the
# line's end.
ORACLE_LOGIN_TRIGGER = rb"jdbc:oracle:[a-z0-9]{2,8}:|(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)[ \t]|userid[ \t]*=|conn(?:ect)?[ \t]"
_ORACLE_USER_RE = re.compile(rb"(?i)(?:(?<=[ \t])-[a-z]{1,8}[ \t]+)*(?:target[ \t]*=?[ \t]*)?[ \t]*[A-Za-z0-9_$#\"]{1,64}/")
_ORACLE_PASSWORD_RE = re.compile(rb"(?P<pw>\"[^\"\n]{4,128}\"|[^\s/@\"'`;,()\\]{4,128})"
                                 rb"(?:(?P<after>@|[ \t]+as[ \t]+sys)|(?=[\s\"'`;,)\\]|\Z))", re.I)


def _oracle_logins(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for _, end in found:
        user = _ORACLE_USER_RE.match(data, end)
        m = _ORACLE_PASSWORD_RE.match(data, user.end()) if user is not None else None
        keyword = data[max(0, end - 8) : end].rstrip(b" \t").lower()
        if m is None or (m.group("after") is None and keyword.endswith((b"conn", b"connect"))):
            continue  # `connect to/from the database`: prose
        pw_start, pw_end = m.span("pw")
        if data[pw_start] == 0x22:  # a quoted password (`scott/"p@ss w"@db`)
            pw_start, pw_end = pw_start + 1, pw_end - 1
        if not is_non_secret_password(data[pw_start:pw_end]):
            out.append(Span(pw_start, pw_end, "password", PRIORITY_CONTEXT))


def _slack_hooks(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        m = _SLACK_HOOK_RE.match(data, start)
        if m is not None:
            out.append(Span(*m.span("v"), "slack-webhook", PRIORITY_FORMAT))


def _discord_hooks(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        m = _DISCORD_HOOK_RE.match(data, start)
        if m is not None:
            out.append(Span(*m.span("v"), "discord-webhook", PRIORITY_FORMAT))


def _azure_secrets(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        begin = start - 3  # three characters and a digit come before `Q~`
        if begin < 0 or data[begin + 3] not in _DIGITS or _glued_before(data, begin):
            continue
        m = _AZURE_SECRET_RE.match(data, begin)
        if m is not None:
            out.append(Span(m.start(), m.end(), "azure-client-secret", PRIORITY_FORMAT))


def _sas_signatures(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        if start > 0 and data[start - 1] in b"?&;":
            m = _SIG_VALUE_RE.match(data, start)
            if m is not None:
                out.append(Span(*m.span(1), "azure-sas-signature", PRIORITY_CONTEXT))


def _softlayer_keys(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        m = _SOFTLAYER_RE.match(data, start)
        if m is not None:
            out.append(Span(*m.span("v"), "softlayer-api-key", PRIORITY_FORMAT))


def _der_keys(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for start, _ in found:
        if start > 0 and data[start - 1] in _BASE64_CHARS and not escape_before(data, start):
            continue  # inside a longer base64 run (an image): not where a key begins
        end, chars = _der_key_end(data, start)
        if chars >= _DER_KEY_MIN:
            out.append(Span(start, end, "private-key", PRIORITY_FORMAT))


# A PEM file encoded whole as base64 starts with `-----BEGIN` encoded: a kubeconfig's `client-key-data`,
# Kubernetes' `tls.key`, a `PRIVATE_KEY_B64` variable. Its first line, decoded, says whether a private key follows.
ENCODED_PEM = b"LS0tLS1CRUdJTi"
# the examples' heads, encoded here (a literal one in ctxtap's source would be a finding of its own)
_ENCODED_KEY_HEAD = base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI").decode()
_ENCODED_CERT_HEAD = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBkTCB+").decode()
_ENCODED_HEAD = 120  # base64 characters decoded to read the PEM's first line (90 bytes)


def _encoded_pems(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for _, hit_end in found:
        start = hit_end - len(ENCODED_PEM)
        if start > 0 and data[start - 1] in _BASE64_CHARS and not escape_before(data, start):
            continue  # inside a longer base64 run: not where an encoded file begins
        first = _BASE64_LINE_RE.match(data, start, min(len(data), start + _ENCODED_HEAD)).group()  # type: ignore[union-attr]
        head = decoded_text(first, skips=(0,))  # a PEM file is text
        if head is not None and b"PRIVATE KEY" in head.split(b"\n", 1)[0]:
            end, _ = _der_key_end(data, start)
            out.append(Span(start, end, "private-key", PRIORITY_FORMAT))


# minisign's and signify's key files: a comment line that says which key follows (`untrusted comment: minisign
# encrypted secret key`), then the key as one line of base64. A public key's file says `public key` and stays.
_SECRET_KEY_COMMENT = rb"untrusted comment:[^\r\n\\]{0,80}secret key"
_KEY_LINE_RE = re.compile(rb"[^\r\n\\]{0,40}" + _LINE_BREAK_RE.pattern + rb"(?P<v>[A-Za-z0-9+/]{40,}={0,2})")


def _comment_keys(data: bytes, found: Iterable[Hit], out: list[Span]) -> None:
    for _, end in found:
        m = _KEY_LINE_RE.match(data, end)
        if m is not None:
            out.append(Span(*m.span("v"), "private-key", PRIORITY_FORMAT))


# Each trigger with the verifier of what it found (findings are appended in this order).
_CONTEXT: tuple[tuple[Trigger, Callable[[bytes, Iterable[Hit], list[Span]], None]], ...] = (
    (Trigger(rb"-----BEGIN[ A-Za-z0-9]{0,40}(?:PRIVATE KEY|SECRET KEY|Static key)", literals=(b"-----BEGIN",), window=80,
             som=True), _pem_keys),
    # a URL's password (`redaction.url_credentials`), reported at an `@` (most URLs have no password:
    # a bare `://` trigger was three of every four hits on agent bodies)
    (Trigger(url_credentials.TRIGGER, literals=(b"://",), window=url_credentials.REACH,
             py_pattern=url_credentials.PY_TRIGGER), _url_passwords),
    # the same without a scheme (`corp/admin:pw@10.0.0.9`, `--proxy user:pw@proxy:8080`), reported at the host
    (Trigger(url_credentials.AUTHORITY_TRIGGER, literals=(b"@",), window=2, som=True, opens=False),
     _authority_passwords),
    (Trigger(url_credentials.QUOTED_AUTHORITY_TRIGGER, literals=(b"@",), window=2, som=True, opens=False),
     _authority_passwords),
    (Trigger(ORACLE_LOGIN_TRIGGER, literals=(b"jdbc:oracle:", b"sqlplus", b"sqlldr", b"expdp", b"impdp", b"rman",
                                             b"dgmgrl", b"userid", b"conn"), window=20, caseless=True, opens=False),
     _oracle_logins),
    (Trigger(
        rb"hooks\.slack\.com/(?:services|workflows|triggers)/",
        literals=(b"hooks.slack.com/",),
        window=40,
        som=True,
    ), _slack_hooks),
    (Trigger(rb"discord(?:app)?\.com/api/webhooks/", literals=(b"discord",), window=40, som=True), _discord_hooks),
    (Trigger(rb"[0-9]Q~", literals=(b"Q~",), window=2, som=True), _azure_secrets),
    (Trigger(rb"sig=", literals=(b"sig=",), window=0, som=True), _sas_signatures),
    (Trigger(rb"api\.softlayer\.com/soap/", literals=(b"softlayer.com/soap/",), window=8, som=True, caseless=True),
     _softlayer_keys),
    (Trigger(_DER_KEY_HEAD, literals=(b"MI", b"CAQ", b"b3BlbnNzaC1rZXktdjE"), window=0, som=True), _der_keys),
    (Trigger(ENCODED_PEM, literals=(ENCODED_PEM,), window=0), _encoded_pems),
    (Trigger(_SECRET_KEY_COMMENT, literals=(b"untrusted comment:",), window=100, caseless=True), _comment_keys),
)
CONTEXT_TRIGGERS: tuple[Trigger, ...] = tuple(t for t, _ in _CONTEXT)
_CONTEXT_VERIFIERS = tuple(verify for _, verify in _CONTEXT)


def find_context_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append spans of PEM private keys, URL passwords, webhook URLs, SAS signatures, Entra secrets,
    SoftLayer keys in URLs, private keys' base64 bodies without their BEGIN line, PEM files encoded whole
    as base64 and minisign's and signify's secret keys.

    `hits[i]` are the (start, end) matches of `CONTEXT_TRIGGERS[i]`.
    """
    for verify, found in zip(_CONTEXT_VERIFIERS, hits, strict=True):
        if found:
            verify(data, found, out)


def _der_key_end(data: bytes, start: int) -> tuple[int, int]:
    """Where a base64 key body from `start` ends (its lines, each but the last full), and its characters."""
    line = _BASE64_LINE_RE.match(data, start)
    end, chars = line.end(), line.end() - start
    while end - line.start() >= _FULL_LINE and data[end - 1 : end] != b"=":
        brk = _LINE_BREAK_RE.match(data, end)
        if brk is None:
            break
        line = _BASE64_LINE_RE.match(data, brk.end())
        stop = line.end()
        if stop == line.start() or (stop < len(data) and data[stop] not in _KEY_LINE_ENDS
                                    and not escape_before(data, stop + 2)):
            break  # a line of prose or code after the key (`end of it`): not part of it
        end, chars = line.end(), chars + line.end() - line.start()
    return end, chars


def _glued_before(data: bytes, start: int) -> bool:
    """Is the byte before `start` part of the same word (not a delimiter, not the end of an escape)?"""
    if start == 0 or data[start - 1] not in _AZURE_SECRET_CHARS:
        return False
    return not escape_before(data, start)


def is_placeholder_password(password: bytes) -> bool:
    """`:${DB_PASS}@`, `:<pw>@`, `:****@` and `:your-password@` in docs are templates, not secrets."""
    return url_credentials.is_template_password(password)


TOKENS = Detector(
    "token-formats",
    tuple(token_triggers()),
    find_tokens,
    examples=samples(
        "cloned it with ghp_<alnum:36> yesterday",
        "the key sk-ant-api03-<b64url:80> was in the log",
        '{"aws_access_key_id": "AKIA<upper:16>"}',
        "token eyJ<b64url:16>.eyJ<b64url:24>. end",  # an unsigned JWT
        "gcloud gave me 1//0<b64url:100> to keep",
        "push with AAAA<b64url:7>:APA91b<b64url:134> now",
        "x\\nghp_<alnum:36>",  # right after a JSON escape
    ),
    near_misses=samples(
        "foo_ghp_<alnum:36>",  # inside a longer run
        "iVBORw0KGgoAAAANSUhEUgAA/AKIA<upper:16>/x+y",  # the shape inside base64
        "sk-<alnum:20>",  # too short for any `sk-` format
        "class APDUResponseHandler:",
    ),
)

CONTEXT = Detector(
    "context-formats",
    CONTEXT_TRIGGERS,
    find_context_spans,
    examples=samples(
        "-----BEGIN RSA PRIVATE KEY-----\n<b64:64>\n<b64:64>\n",  # cut before its END line
        "<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\n<hex:32>\n<hex:32>\n-----END OpenVPN Static key V1-----",
        "DATABASE_URL=postgres://app:<mixed:12>@db.internal:5432/app",
        "curl -X POST https://hooks.slack.com/services/T<upper:8>/B<upper:10>/<alnum:24>",
        "http://api.softlayer.com/soap/v3.1/<lower:64>",
        "psexec.py corp/admin:<alnum:10>!@10.0.0.9 cmd",  # an authority without a scheme (Impacket's target)
        "wmiexec.py 'corp.local/admin:P@<alnum:8> x'@dc01",  # the same quoted: the password holds `@` and a space
        "pip install --proxy alice:<alnum:12>@proxy.corp:8080 requests",
        'db, err := sql.Open("mysql", "app:<alnum:12>@tcp(db:3306)/app?parseTime=true")',  # Go's DSN: a network
        "spring.datasource.url=jdbc:oracle:thin:scott/<alnum:12>@db.internal:1521:ORCL",  # Oracle's logins
        "sqlplus -s system/<alnum:12>@//db:1521/XEPDB1 @migrate.sql && rman target sys/<alnum:12>@prod",
        "sqlldr userid=app/<alnum:12> control=load.ctl && echo 'CONNECT sys/<alnum:12> AS SYSDBA'",
        f"    client-key-data: {_ENCODED_KEY_HEAD}<b64:160>",  # a PEM file encoded whole (a kubeconfig)
        "untrusted comment: minisign encrypted secret key\nRWRTY0Iy<b64:204>\n",  # minisign's key file
    ),
    near_misses=(
        "postgres://${DB_USER}:${DB_PASS}@db/app",
        "see https://example.com:443 (or mail ops@example.com)",
        "sed -e 's/$1$2/x/' file",
        "https://hooks.slack.com/services/",
        "mailto:alice2@example.com, author:bob7@example.org, image: nginx:1.25@sha256:<hex:64>",
        '"bom-ref": "tool:pkg:pypi/trove-classifiers@2026.9.21.13", at 12:00:00@host1.example.com',
        "GRANT ALL ON app.* TO 'app'@localhost; CREATE USER 'ro'@'%';",  # MySQL's quoted users: no password
        f"    certificate-authority-data: {_ENCODED_CERT_HEAD}",  # a certificate encoded whole: public
        "untrusted comment: signify public key\nRWRCSwAAAA<b64:46>\n",  # a public key's file
        'fmt.Sprintf("%s:%s@tcp(%s)/%s", u, p, h, db) and "root:@tcp(db:3306)/app"',  # a format; no password
        "sqlplus / as sysdba && sqlplus /nolog && rman target / && jdbc:oracle:thin:@//db:1521/XEPDB1",  # no password
        "connect to/from the database; sqlplus and/or SQLcl; sqlplus app/$DB_PASS@db",  # prose; a reference
    ),
)
