"""Every credential detector, in the one order the scanner runs them.

The scanner (`redaction.scanner`) loops over this tuple: it builds one engine from every
detector's triggers, remembers which triggers are whose, and hands each detector its hits.
Add a detector with one line here (and its module: see `ARCHITECTURE.md`, "Add a detector").

The order is the order findings are made, and it matters in three places:

* the name rules (`assignments`, `reads_found`) come after every detector whose findings end
  a bare value (ctxtap's token and context formats and the rule catalogue: priority up to
  gitleaks'), so a value stops where such a secret begins, as it will once that secret is a
  placeholder (a second pass sees the same values);
* where two findings cover the same bytes with the same priority, the first one's kind names
  the placeholder (`spans.merge_spans` keeps input order);
* decoders come last: a flat decoder (percent-encoding) first, then the scanner opens JSON
  strings whose escapes hide a rule (`json_escapes`, no trigger of its own), then the nesting
  decoder (base64 files, a new level).

The engine numbers triggers in this order too, except the rule catalogue's, numbered after
every other (`Detector.numbered_last`).
"""

from __future__ import annotations

from collections.abc import Callable

from ctxtap.redaction import (
    assignments,
    base64_runs,
    cli_flags,
    columns,
    comparisons,
    config_fields,
    detectors,
    directives,
    encodings,
    gitleaks_match,
    host_tokens,
    html_entities,
    json_web_keys,
    key_lines,
    password_hashes,
    prose,
    secret_stores,
    seed_phrases,
    token_shapes,
    url_tokens,
    vendor_tokens,
)
from ctxtap.redaction.detector import Detector
from ctxtap.redaction.gitleaks import RuleSet

REGISTRY: tuple[Detector | Callable[[RuleSet], Detector], ...] = (
    detectors.TOKENS,  # provider keys and tokens by their format
    detectors.CONTEXT,  # PEM blocks, URL passwords, webhooks, SAS signatures
    password_hashes.DETECTOR,  # crypt, PHC, Django and LDAP hash strings, whatever the algorithm
    json_web_keys.DETECTOR,  # a JSON Web Key's private members (`d`, RSA's factors, `k`)
    seed_phrases.DETECTOR,  # a wallet's seed phrase under its name (`MNEMONIC="…twelve words…"`)
    gitleaks_match.rules_detector,  # the vendored catalogue (gitleaks, Kingfisher), made for the scanner's rule set
    assignments.DETECTOR,  # `name = value` under a credential's name; reads what the above found
    cli_flags.DETECTOR,  # `--password x`, `mysql -pX`, a user and password after `curl -u`, piped secrets
    comparisons.DETECTOR,  # `"x" == password`, `HTTPBasicAuth("u", "pw")`
    config_fields.DETECTOR,  # XML, PHP defines, connection strings, .netrc, .pgpass, env lists, cookies
    host_tokens.DETECTOR,  # tokens filed under a host's name (Composer's auth.json, `composer config`)
    secret_stores.DETECTOR,  # values handed to a secret store (a Kubernetes Secret, `gh secret set`)
    directives.DETECTOR,  # `requirepass x`, `rootpw x`, `ENV DB_PASSWORD x`: a password directive's line
    prose.DETECTOR,  # "my password is ...", Markdown table rows
    columns.DETECTOR,  # a table's column whose header names a credential (Markdown, CSV, TSV)
    vendor_tokens.DETECTOR,  # keys of vendors no list names, by their structure
    token_shapes.DETECTOR,  # the same without a separator: bech32 secrets, signed JSON tokens, glued heads
    key_lines.DETECTOR,  # a private key's body without its BEGIN line: base64 lines of one width
    url_tokens.DETECTOR,  # a random segment in a URL's path (webhooks, reset links)
    encodings.DETECTOR,  # percent-encoded runs (a flat decoder)
    html_entities.DETECTOR,  # HTML's character references: code shown in a web page (a flat decoder)
    base64_runs.DETECTOR,  # files attached as base64 (a nesting decoder)
)


def detectors_for(ruleset: RuleSet) -> tuple[Detector, ...]:
    """The registry with the rule catalogue made from `ruleset`, checked for the order rules above."""
    out = tuple(entry if isinstance(entry, Detector) else entry(ruleset) for entry in REGISTRY)
    names = [d.name for d in out]
    if not all(d.triggers for d in out):
        raise ValueError("a detector without triggers would never run: give it what every finding contains")
    if len(set(names)) != len(names):
        raise ValueError(f"two detectors share a name: {names}")
    decoding = [d.decode is not None for d in out]
    if decoding != sorted(decoding):
        raise ValueError("decoders come after every detector that finds on the bytes")
    nesting = [d.nests for d in out if d.decode is not None]
    if nesting != sorted(nesting):
        raise ValueError("flat decoders come before nesting ones (the JSON strings are opened between)")
    return out
