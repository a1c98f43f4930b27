"""Random tokens in a URL's path: webhooks, reset and sign-in links, shared capability URLs.

`https://hooks.example/services/T0123/B0456/<token>` carries its secret in
its path: whoever holds the URL can post, reset or read. The catalogues list a few such hosts
(Slack, Discord, Teams); this finds the structure instead: after `scheme://host/`, a path segment
of twenty letters and digits or more, no separator inside, judged as a key glued to its head is
judged anywhere (`token_shapes.glued_key`: drawn at random, no words, no digest, no address).
The glued shape does not look after a `/` on its own, because file paths and standard base64 hold
one before long runs; inside a URL's path neither does. Segments with a separator (`pat-…`,
`T0123_…`) are the vendor-token detector's, which reads URL paths already; UUIDs and hex (commit
and content hashes) stay.

A token may also stand alone before the host (`https://<token>@github.com/org/repo.git`, a Sentry
DSN's key): a userinfo with no password. A user's name there is a word or an address; twenty
letters and digits drawn at random, or hex of thirty-two and more (no commit or content hash is
written before a host), are a credential.

A URL that names a hook or a credential says what its random segments are, whatever their alphabet:
after a path segment `hooks`, `webhook`, `keys`, `token` or `secret` (`/webhook/<hex>/<hex>`,
`/hooks/<base36>`, `/webhooks/<id>/<base64url>`, `/tokens/<uuid>`), and anywhere in the path of a host
whose first label is a hook's (`hooks.…`, `hook.eu1.…`, `webhook.…`), a segment of sixteen or more that is
a UUID, hex of twenty-four or more, or drawn at random (`looks_random`) is the credential. Slugs and
names of words stay; so do numbers (a hook's id).
"""

from __future__ import annotations

import re

from ctxtap.redaction.detector import Detector, TriggerHits, samples
from ctxtap.redaction.engine import Trigger
from ctxtap.redaction.false_positives import (
    UUID_RE,
    all_classes,
    has_digit,
    labelled_digest,
    looks_random,
    reads_as_identifier,
    reads_as_words,
)
from ctxtap.redaction.spans import PRIORITY_GENERIC, Span
from ctxtap.redaction.token_shapes import glued_key

KIND = "url-token"
SEGMENT_MIN = 20
_SEGMENT_MAX = 256
_HEX_KEY_MIN = 32
HOOK_SEGMENT_MIN = 16
_HOOK_HEX_MIN = 24
_HOOK_SEGMENTS_MAX = 6  # segments judged after a hook's name or host
# The host, any segments, then twenty letters and digits right after a `/`; its end is 20 past the segment's start.
TRIGGERS: tuple[Trigger, ...] = (
    Trigger(rb"://[^\s/\"'<>\\]+/(?:[^\s/\"'<>\\?#]*/)*[A-Za-z0-9]{%d}" % SEGMENT_MIN, literals=(b"://",),
            window=2048, opens=False),
    # a userinfo of letters and digits alone, then `@`: reported at the `@`
    Trigger(rb"://[A-Za-z0-9]{%d,%d}@" % (SEGMENT_MIN, _SEGMENT_MAX), literals=(b"://",), window=_SEGMENT_MAX + 8,
            opens=False),
    # a path segment that names a hook or a credential, then sixteen token characters (the verifier finds
    # the URL around it and judges the segments after the name)
    Trigger(rb"(?:hooks?|keys?|tokens?|secrets?)/[A-Za-z0-9_\-]{%d}" % HOOK_SEGMENT_MIN,
            literals=(b"hook", b"key", b"token", b"secret"), caseless=True, window=32, opens=False),
    # a host whose first label is a hook's: reported at the `/` that starts its path
    Trigger(rb"://[A-Za-z0-9\-]{0,40}hooks?\.[A-Za-z0-9.\-]{1,253}(?::[0-9]{1,5})?/", literals=(b"://",),
            caseless=True, window=320, opens=False),
)
_ALNUM_RE = re.compile(rb"[A-Za-z0-9]*")
# What may follow a whole segment: the next segment, the query, the fragment, the URL's end (space, quote,
# bracket, a JSON escape, a comma or a sentence's full stop). Anything else (`-`, `_`, `.js`, `%2F`, `:`)
# makes it part of a longer segment: a name, a file, a vendor's token with a separator.
_ENDS = frozenset(b"/?#&; \t\r\n\"'`<>()[]{}\\,|")


def _segment_end_ok(data: bytes, stop: int) -> bool:
    if stop >= len(data) or data[stop] in _ENDS:
        return True
    nxt = data[stop + 1 : stop + 2]
    return data[stop] in b".!" and (not nxt or nxt in b" \t\r\n\"'\\)")  # a sentence's end


def find_url_token_spans(data: bytes, hits: TriggerHits, out: list[Span]) -> None:
    """Append a span for each random segment the trigger reached (its hits end 20 past the segment's start)."""
    done = -1
    for _, end in hits[0]:
        start = end - SEGMENT_MIN
        if start < done:
            continue
        stop = _ALNUM_RE.match(data, end).end()
        done = stop
        run = data[start:stop]
        if len(run) > _SEGMENT_MAX or not _segment_end_ok(data, stop):
            continue
        if not has_digit(run) or not glued_key(run) or labelled_digest(data, start):
            continue
        out.append(Span(start, stop, KIND, PRIORITY_GENERIC))  # any named rule names it better
    for _, end in hits[1]:
        start = data.rfind(b"://", max(0, end - _SEGMENT_MAX - 4), end) + 3  # the trigger: `://`, letters and digits, `@`
        user = data[start : end - 1]
        if _HOST_AFTER_RE.match(data, end) is not None and _userinfo_key(user):
            out.append(Span(start, end - 1, KIND, PRIORITY_GENERIC))
    for _, end in hits[2]:
        slash = end - HOOK_SEGMENT_MIN - 1
        if _names_hook(data, slash) and _in_url_path(data, slash):
            _hook_segments(data, slash + 1, out)
    for _, end in hits[3]:
        _hook_segments(data, end, out)


_HOOK_NAMES = frozenset(b"hook hooks webhook webhooks key keys apikey apikeys api_key api_keys api-key api-keys "
                        b"token tokens secret secrets".split())
_SEGMENT_RE = re.compile(rb"[A-Za-z0-9_\-]*")
_URL_STOPS = b" \t\r\n\"'`<>()[]{}\\,|"


def _names_hook(data: bytes, slash: int) -> bool:
    """Is the path segment that ends at `slash` a hook's or a credential's name (`webhooks`, `api_key`)?"""
    begin = data.rfind(b"/", max(0, slash - 16), slash)
    return begin >= 0 and data[begin + 1 : slash].lower() in _HOOK_NAMES


def _in_url_path(data: bytes, at: int) -> bool:
    """Is `at` inside a URL's path: `scheme://host/` before it, with nothing between that ends a URL?"""
    first = max(0, at - 2048)
    scheme = data.rfind(b"://", first, at)
    if scheme < 0:
        return False
    between = data[scheme + 3 : at]
    return b"/" in between and len(between.translate(None, _URL_STOPS)) == len(between)


def _hook_segments(data: bytes, start: int, out: list[Span]) -> None:
    """Spans for the credential segments of a hook's path from `start` (just after a `/`) on."""
    for _ in range(_HOOK_SEGMENTS_MAX):
        stop = _SEGMENT_RE.match(data, start).end()
        if not _segment_end_ok(data, stop):
            return  # a file name (`.json`), an escape, something no path segment holds
        if _hook_secret(data[start:stop]):
            out.append(Span(start, stop, KIND, PRIORITY_GENERIC))
        if stop >= len(data) or data[stop] != 0x2F:  # `/`: the next segment; anything else ends the path
            return
        start = stop + 1


def _hook_secret(segment: bytes) -> bool:
    """Is a segment of a hook's URL its secret: a UUID, hex of twenty-four or more, or letters and digits
    drawn at random? A number is the hook's id; words (a slug, a name) are the API's."""
    if not HOOK_SEGMENT_MIN <= len(segment) <= _SEGMENT_MAX or segment.isdigit():
        return False
    if UUID_RE.fullmatch(segment) is not None:
        return True
    if _HEX_RE.fullmatch(segment) is not None:
        return len(segment) >= _HOOK_HEX_MIN and has_digit(segment)
    return looks_random(segment) and not reads_as_words(segment) and not reads_as_identifier(segment)


# a host name (or address) and what ends it: a port, a path, the URL's end
_HOST_AFTER_RE = re.compile(rb"[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9\-]+)*(?::[0-9]{1,5})?"
                            rb"(?:[/?#\s\"'`<>()\[\]\\,;]|$)")
_HEX_RE = re.compile(rb"[0-9a-fA-F]+")


def _userinfo_key(user: bytes) -> bool:
    """Is a userinfo with no password a key? Hex of thirty-two and more with letters and digits (old GitHub
    tokens, Sentry's DSN keys); letters of both cases and digits that do not split into a programmer's
    words (`Jenkins2BuildAgent01` does); or a key as a glued one is judged anywhere."""
    if not has_digit(user):
        return False
    if len(user) >= _HEX_KEY_MIN and _HEX_RE.fullmatch(user) is not None:
        return not user.isdigit()  # some letters
    return (all_classes(user) and not reads_as_identifier(user)) or glued_key(user)


DETECTOR = Detector(
    "url-tokens",
    TRIGGERS,
    find_url_token_spans,
    examples=samples(
        "curl -X POST https://hooks.qzv.example/services/T0123ABCD/B0456EFGH/Q7<alnum:22> -d '{}'",
        "webhook: https://relay.qzv.example/trigger/deploy/with/key/Zk3<alnum:19>",
        '{"url": "https://qzv.example/reset-password/Q8<alnum:30>?lang=en"}',
        "post to https://qzv.example/w/k9<lower:40>.",
        "git clone https://Q7<alnum:30>@github.com/org/repo.git",  # a token as the userinfo, no password
        'dsn = "https://3f<hex:30>@o4504.ingest.qzv.example/4505"',
        "curl -X POST https://acme.qzv.example/webhook/<hex:32>/<hex:32>",  # a hook's name, then hex
        '{"url": "https://chat.qzv.example/hooks/k2<lower:24>"}',  # base36 of one case after `hooks`
        "https://qzv.example/api/webhooks/614000783534954239/aH<b64url:66>",  # an id, then base64url
        "trigger https://qzv.example/webhook/<hex:8>-<hex:4>-4<hex:3>-a<hex:3>-<hex:12> now",  # a UUID
        "POST https://hook.eu1.qzv.example/e9<lower:30>",  # a host whose first label is a hook's
    ),
    near_misses=(
        "https://github.com/org/repo/blob/3f786850e387550fdab836ed7e6dc881de23001b/src/main.py",  # a commit
        "https://cdn.example.com/static/js/main.a1af608a1019e2ff468d.bundle.js",  # a file name with its hash
        "https://docs.example.com/reference/AbstractSingletonProxyFactoryBean2/",  # a name made of words
        "https://api.example.com/v1/items/550e8400-e29b-41d4-a716-446655440000",  # a UUID
        "https://example.com/articles/how-to-configure-the-proxy-2024",  # a slug
        "see /usr/lib/python3/site-packages/Xk8mP2qR7sT4vW9yZ1bC3dF6/init.py",  # a file path, no URL
        "https://ipfs.io/ipfs/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",  # a content address
        "git clone https://deployuser2024production@git.example.com/org/repo.git",  # a user's name of words
        "https://unpkg.com/@babel/core@7.24.0/lib/index.js",  # a package and its version, no userinfo
        "ssh://AbstractSingletonProxyFactoryBean@host.example.com/repo",  # a name made of words
        "https://docs.github.com/en/webhooks/using-webhooks/creating-webhooks-for-a-repository",  # slugs
        "https://api.github.com/repos/octo/hello/hooks/12345678901234567890",  # a hook's id, a number
        "https://github.com/facebook/react/tree/main/src/hooks/useSyncExternalStore2",  # a name after `hooks`
        "https://example.com/webhooks/stripe_payment_intent_succeeded",  # words after `webhooks`
        "https://api.example.com/v1/tokens/{token_id}/revoke",  # a template
        "see src/hooks/9f86d081884c7d659a2feaa0c55ad015/index.ts",  # hex after `hooks`, but no URL
        "https://hooks.example.com/static/app.min.js",  # a hook's host, a file
    ),
)
