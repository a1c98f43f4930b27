"""What is not a secret though it sits where one could: the value and name checks every detector shares.

Code, docs and configuration are full of near misses under a credential's name: references
(`${DB_PASSWORD}`, `%(pw)s`, `<your key>`), masks (`****`, `xxxx`), placeholder words
(`changeme`, `none`), paths, numbers, identifiers and expressions (`token: str`,
`key = self.api_key`), names that describe a credential (`password_length`) and names the
analysis needs (`prompt_cache_key`, `next_page_token`). The detectors (the name rules, command
lines, configuration formats, prose, comparisons, gitleaks' `name = value` rules, the URL
rules) ask these checks before they report a value, so a heuristic is tuned in one place.

`REJECTED` remembers the name rules' rejections per surrounding text (bodies repeat the same
lines); `redaction.scanner.clear_caches` empties it.
"""

from __future__ import annotations

import base64
import binascii
import re

from ctxtap.redaction.entropy import shannon_entropy

# Names whose values the analysis needs or that are not credentials.
NOT_SECRET_NAMES = frozenset(
    """
    promptcachekey cachekey idempotencykey xidempotencykey dedupkey dedupekey deduplicationkey
    sortkey partitionkey primarykey foreignkey rowkey hashkey rangekey uniquekey compositekey
    shardkey clusterkey indexkey publickey publishablekey routingkey objectkey s3key filekey
    bucketkey lookupkey groupkey mapkey dictkey statekey eventkey messagekey toolkey hotkey
    shortcutkey i18nkey translationkey labelkey fieldkey columnkey featurekey flagkey metrickey
    attributekey itemkey nodekey parentkey childkey propkey datakey valuekey namekey typekey
    idkey entrykey storekey querykey conversationkey threadkey requestkey
    pagekey cursorkey continuationkey
    bostoken eostoken padtoken unktoken septoken clstoken masktoken nexttoken nextpagetoken
    pagetoken continuationtoken paginationtoken synctoken nextsynctoken resumetoken cursortoken
    cancellationtoken canceltoken maxtoken stoptoken starttoken endtoken specialtoken lasttoken
    firsttoken prevtoken previoustoken imagetoken audiotoken videotoken thinktoken tooltoken
    decodertoken fimtoken
    bypass compass
    """.lower().split()
)

_NON_SECRET_WORDS = frozenset(
    b"""
    none null nil true false undefined yes no on off required optional str string bytes int
    integer bool boolean any object text number secret password passwd token key apikey api_key
    changeme placeholder redacted hidden masked empty example todo tbd n/a na unset default
    """.split()
)
IDENTIFIER_RE = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
_ENV_NAME_RE = re.compile(rb"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
UUID_RE = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_RANDOM_CHARS_RE = re.compile(rb"[A-Za-z0-9+/=_.~:%\-]+")
_PATH_RE = re.compile(rb"(?:\.{0,2}|~)/[\w.\-]+(?:/[\w.\-]*)+")
_NUMBERISH_RE = re.compile(rb"[0-9.,_:\-]+|0[xX][0-9a-fA-F_]+|0[oObB][0-7_]+")
# `${VAR}`, `$VAR`, `%(name)s`, `%VAR%`, `%s`, `{{ tpl }}`, `{name}`, `<your key>`, `[list]`, `(regex)`, YAML `!tag`,
# `*alias`, `&anchor`, `@reference`, `=` (a second `=`), `#fff`. A `%` before letters that neither close
# with `%` nor end at one directive's letter is a password's first character (`%vnSKkz2S7B1GH`).
REFERENCE_RE = re.compile(
    rb"\$|%\([A-Za-z_]|%[A-Za-z_][A-Za-z0-9_]*%|%[-+ #0-9.]*[A-Za-z](?![A-Za-z0-9])|\{|<|\[|\(|![A-Za-z]+$"
    rb"|\*[A-Za-z_]*$|&[A-Za-z_]+$|@[A-Za-z_][\w.]*$|=|#[0-9a-fA-F]{3,8}$"
)
_DOTTED_RE = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+")
_NAME_START_RE = re.compile(rb"[a-z_$]{2}|[A-Z][a-z]|[A-Z]{2}")
_REAL_WORD_RE = re.compile(rb"[A-Za-z][a-z]{2,}")
_VOWEL_RE = re.compile(rb"[aeiouyAEIOUY]")
_CAMEL_WORD_RE = re.compile(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_WORDS_RE = re.compile(rb"_*[a-z][a-z_\-]*\??|[A-Za-z]+\?")
_EXPRESSION_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:[+*/\-][A-Za-z_][A-Za-z0-9_]*)+")
_MASK_RE = re.compile(rb"(?i)x{4}|\*{3}|\.\.\.|\xe2\x80\xa6|#{4}")
# A value made only of mask characters (`xxxx`, `****`, `...`): what a strong name's value must be to count as masked.
_ALL_MASK_RE = re.compile(rb"(?i)(?:[x*.#_\-]|\xe2\x80\xa6|\xe2\x80\xa2)+")
_JOINED_WORDS_RE = re.compile(rb"[A-Za-z]+(?:[_\-][A-Za-z]+)*")  # `whiteduke`, `dev_admin`, `change-me`
# Letters no word has: a run longer than words get (`abcdefghijabcdefghij`), one letter thrice (`npm_xxxxxxx`).
_LONG_LETTER_RUN_RE = re.compile(rb"[a-z]{16}|([a-z])\1\1")
# A digit-only value this long under a strong name is a credential (numeric ids and secrets), not a count.
_MIN_SECRET_DIGITS = 8


_DIGIT_CHARS = b"0123456789"
_LETTER_CHARS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


_FIELD_BEFORE_RE = re.compile(rb"([A-Za-z_$][A-Za-z0-9_$.\-]{0,48})\\*[\"']?\s*[:=]\s*\\*[\"']?$")
_ID_NAME_RE = re.compile(r"(?:^|[_.\-])(?i:id|ids|uuid|guid)$|[a-z0-9](?:Id|ID|Ids|IDs|Uuid|UUID|Guid|GUID)$")


_LETTER_RUN = re.compile(rb"[A-Za-z]{2,}")
# The fifty commonest letter pairs of English text: a run of capitals made of words (a constant's
# name, `HTTPSCONNECTIONPOOL`) is mostly these pairs; letters drawn at random hit one pair in fourteen.
_ENGLISH_PAIRS = frozenset(
    p.encode() for p in (
        "TH HE IN ER AN RE ON AT EN ND TI ES OR TE OF ED IS IT AL AR ST TO NT NG SE HA AS OU IO LE VE CO ME"
        " DE HI RI RO IC NE EA RA CE LI CH LL BE MA SI OM UR"
    ).split()
)


def letter_pairs(text: bytes) -> int:
    """How many pairs of adjacent letters `text` holds (what `reads_as_words` judges)."""
    return sum(len(run) - 1 for run in _LETTER_RUN.findall(text))


def reads_as_words(text: bytes) -> bool:
    """Do the letters of `text` read as English words (a third of their letter pairs common ones)?"""
    upper = text.upper()
    pairs = letter_pairs(upper)
    return pairs > 0 and sum(upper.count(p) for p in _ENGLISH_PAIRS) * 3 >= pairs


_DIGITS = b"0123456789"


def digit_count(body: bytes) -> int:
    """How many ASCII digits `body` holds (counted in C)."""
    return len(body) - len(body.translate(None, _DIGITS))


def has_digit(body: bytes) -> bool:
    return len(body.translate(None, _DIGITS)) < len(body)


def all_classes(body: bytes) -> bool:
    """Capitals, lower case and digits, each somewhere in `body`: what a base62 key of twenty holds."""
    return body.upper() != body and body.lower() != body and has_digit(body)


_CAMEL_WORD_COVER_RE = re.compile(rb"[A-Z][a-z]{2,}|^[a-z]{3,}")


def camel_case_name(body: bytes) -> bool:
    """Is `body` (letters and digits) a name of capitalised words (`ZodFirstPartyTypeKind3`,
    `getSystemClockWithInfo`)? Such words cover 85 % of it or more, all of it when it holds no digit:
    letters and digits drawn at random do so about once in ten thousand at twenty characters, letters
    alone (no digit to break a word) seven times in ten thousand, less the longer they are."""
    need = 85 if has_digit(body) else 100
    return sum(map(len, _CAMEL_WORD_COVER_RE.findall(body))) * 100 >= need * len(body)


# `sha256=`, `"integrity": "`, `h1:`: the value that follows is a digest, however random it looks
_DIGEST_LABEL_RE = re.compile(rb"(?i)(?:h1|sha[0-9]*|md5|blake[0-9]*[bs]?|xxh[0-9]*|crc[0-9]*|digest|integrity|checksum)"
                              rb"[\"']?\s*[:=]\s*[\"']?$")


_NOT_PRINTABLE = bytes(c for c in range(256) if not (32 <= c < 127 or c in (9, 10, 13)))


def decoded_text(run: bytes, skips: tuple[int, ...] = (0, 1, 2, 3)) -> bytes | None:
    """The text `run` is base64 (standard or url-safe) of, read from any of its first four offsets (a
    cut piece of a longer base64 string; `skips`) or None: a key's body is random bytes, of which a
    quarter or more are not printable. Telemetry fields carry base64 of JSON (`eyJyaCI6...`)."""
    text = run.replace(b"-", b"+").replace(b"_", b"/")
    for skip in skips:
        chunk = text[skip : skip + (len(text) - skip) // 4 * 4]
        try:
            raw = base64.b64decode(chunk, validate=True)
        except (binascii.Error, ValueError):
            continue
        if len(raw) >= 12 and len(raw.translate(None, _NOT_PRINTABLE)) * 10 >= len(raw) * 9:
            return raw
    return None


def labelled_digest(data: bytes, start: int) -> bool:
    """Is the value at `start` labelled as a digest (a wheel's `RECORD` line `sha256=…`, a lockfile's
    `"integrity": "…"`)?"""
    return _DIGEST_LABEL_RE.search(data, max(0, start - 24), start) is not None


def names_no_secret(data: bytes, start: int) -> bool:
    """Is the value at `start` that of a field named for what is no credential (`"next_page_token": "`,
    `"responseId": "`, `cursor=`)? Random opaque values (page tokens, wire ids) look like keys."""
    m = _FIELD_BEFORE_RE.search(data, max(0, start - 64), start)
    if m is None:
        return False
    name = m.group(1).decode("ascii")
    squashed = re.sub(r"[_$.\-]", "", name).lower()
    return squashed in NOT_SECRET_NAMES or _ID_NAME_RE.search(name) is not None


def looks_random(value: bytes) -> bool:
    """A weak name's value must look like a credential, not a word, path or id.

    UUIDs count (API keys and tokens are often UUIDs), and so do random strings
    with few or no digits, as long as they do not read as a programmer's name.
    """
    if basic_credential_b64(value):
        return True
    if len(value) < 16 or not _RANDOM_CHARS_RE.fullmatch(value) or _VERSION_RE.fullmatch(value):
        return False
    if UUID_RE.fullmatch(value):
        return True
    digits = len(value) - len(value.translate(None, _DIGIT_CHARS))
    letters = len(value) - len(value.translate(None, _LETTER_CHARS))
    if letters < 4:
        return False
    if digits >= 2:
        return True
    return shannon_entropy(value) >= 3.5 and not reads_as_identifier(value)


# A version, perhaps after a name (`creds-2026.12.10`, `node-v20.11.1`, `1.2.3-beta2`): numbers and dots, no key
_VERSION_RE = re.compile(rb"(?:[A-Za-z]+[_\-])*v?[0-9]{1,8}(?:\.[0-9]{1,8}){1,3}(?:[_\-+][A-Za-z]+[0-9]*)?")
_BASE64_RE = re.compile(rb"(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_USER_PASS_RE = re.compile(rb"[\x21-\x39\x3b-\x7e]{1,128}:[\x21-\x7e]{1,128}")


def basic_credential_b64(value: bytes) -> bool:
    """Is `value` base64 of `user:password` (Docker's `"auth"`, an `Authorization: Basic` value, an npm
    `_auth`)? Short ones (`dTpwNHNz` is `u:p4ss`) look like no key, but the format says what they are."""
    if not 8 <= len(value) <= 344 or _BASE64_RE.fullmatch(value) is None:
        return False
    try:
        decoded = base64.b64decode(value, validate=True)
    except ValueError:
        return False
    return _USER_PASS_RE.fullmatch(decoded) is not None


def reads_as_identifier(segment: bytes) -> bool:
    """`RegEnumKey`, `Ed25519PrivateKey`, `id_GostR3410_94`, but not `RGrN7bgU` or `xKqLpVzRtWmN`.

    Split into camelCase words, a programmer's name has few one-letter words
    and few digit runs; a generated secret has many.
    """
    words = _CAMEL_WORD_RE.findall(segment)
    singles = sum(1 for w in words if len(w) == 1 and not w.isdigit())
    digit_runs = sum(1 for w in words if w[:1].isdigit())
    return singles <= 1 and digit_runs <= 2


def _is_code_reference(value: bytes) -> bool:
    """`win32api.RegEnumKey`, `ed25519.Ed25519PrivateKey`, but not `o2B564.RGrN7bgU`."""
    if _DOTTED_RE.fullmatch(value) is None:
        return False
    segments = value.split(b".")
    # a word of three letters or more that can be said: `Key`, `environ`, not `bbt` (`JmKRQa771.bbtV`)
    has_word = any(_VOWEL_RE.search(w) for w in _REAL_WORD_RE.findall(segments[-1]))
    starts_like_name = _NAME_START_RE.match(segments[0]) is not None
    return has_word and starts_like_name and all(reads_as_identifier(segment) for segment in segments)


def is_non_secret(
    value: bytes, quoted: bool, kw: bytes, code_context: bool = True, strong: bool = False, literal: bool = False
) -> bool:
    """Values that are clearly not secrets: empty, numbers, booleans, references, masks, code.

    `code_context` is False for tight `NAME=value` (env files), where a dotted
    value is data, not `module.Attribute`. Under a `strong` name the checks fail
    closed: a value only partly masked (`npm_xxxxxxxx`) or a long digit run
    (`740969285179606295`) is redacted. A `literal` (a string assigned to a strong name
    in code or config: `password = "rootpasswd"`) is a secret even when it is one word.
    """
    if len(value) < 4:
        return True
    if REFERENCE_RE.match(value):
        return True
    if _ALL_MASK_RE.fullmatch(value) if strong else _MASK_RE.search(value):
        return True
    lower = value.lower()
    if lower in _NON_SECRET_WORDS:
        return True
    if _NUMBERISH_RE.fullmatch(value) and not (strong and value.isdigit() and len(value) >= _MIN_SECRET_DIGITS):
        return True
    if b"://" in value or _ENV_NAME_RE.fullmatch(value) or _PATH_RE.fullmatch(value):
        return True
    if any(c in b"0123456789" for c in value):
        return not quoted and code_context and _is_code_reference(value)  # `rfc3279.RSAPublicKey`
    # No digit from here on.
    if b"your" in lower or (kw and kw.rstrip(b"s") in lower):  # no name given (gitleaks rules): no name to echo
        return True  # your-api-key-here, "password": "passwordField"
    if _WORDS_RE.fullmatch(value) and not _LONG_LETTER_RUN_RE.search(value) and not (
            literal and (value.isalpha() or not quoted and _JOINED_WORDS_RE.fullmatch(value))):
        # "password": "unreserved", "token": "string?"; but a literal's `whiteduke`, an env line's `dev_admin`
        # (in code `LEARNER_STATS_KEY = "learner_stats"` names a field)
        return True
    if quoted:
        return False
    if IDENTIFIER_RE.fullmatch(value) or _EXPRESSION_RE.fullmatch(value):
        # `password=password`, `token: str`, `key = self.api_key`, `pwd+pwd`; but
        # `PASS=xKqLpVzRtWmN` does not read as a name.
        if strong and _LONG_LETTER_RUN_RE.search(lower):
            return False  # `npm_xxxxxxxxxxx`: no programmer's name
        if strong and not code_context:  # `DB_PASS=TestSourcePassword`: env data, not code
            return (len(value) < 12 and not literal) or b"." in value
        return len(value) < 12 or b"." in value or reads_as_identifier(value)
    return False


def passphrase(value: bytes) -> bool:
    """Words separated by spaces under a strong name: `correct horse battery staple`."""
    words = value.split()
    lowered = value.lower()
    if len(words) < 2 or b"your" in lowered or b"enter" in lowered or _MASK_RE.search(value):
        return False
    return not REFERENCE_RE.match(value)


def is_non_secret_password(value: bytes) -> bool:
    """Is a value given where only a password goes (`--password=X`, `sshpass -p X`, `mysql -pX`, `;Pwd=X;`) clearly none?
    Words are passwords there (`whiteduke`, `dev_admin`); references, placeholders, masks, short numbers,
    paths and dotted names are not."""
    return is_non_secret(value, False, b"password", code_context=False, strong=True, literal=True)


def is_non_secret_value(value: bytes, quoted: bool, kw: bytes) -> bool:
    """Is `value`, given under a credential name `kw`, clearly not a secret (empty, a reference, a word)?"""
    return is_non_secret(value, quoted, kw, code_context=False)


def is_non_secret_literal(value: bytes, kw: bytes) -> bool:
    """Is a string literal compared with a strong name's variable clearly not a secret?"""
    return is_non_secret(value, True, kw, strong=True)


# Words after a credential's name that make it describe the credential, not hold it.
_DESCRIBING_WORDS = frozenset(
    b"""
    name names id ids arn ref refs path paths file files dir env var vars url uri type kind length len size
    min max count field fields label prompt policy pattern regex version provider manager store backend mode
    format header param rotation expiry expires expiration ttl timeout hint help description desc message msg
    error errors title placeholder input reset required enabled disabled strength rules rule schema column
    identity identities
    """.split()
)


def secret_tail(tail: bytes) -> bool:
    """`_super_secure`, `_myservice`: still the secret; `_length`, `_file`, `_id`: about it."""
    words = re.split(rb"[_\-]", tail.lower())
    return not any(w in _DESCRIBING_WORDS or w.isdigit() for w in words if w)


# The name rules' rejections, keyed by the text around the assignment (see `assignments._values`).
REJECT_LIMIT = 16384
REJECTED: set[tuple[bytes, int, bytes]] = set()
