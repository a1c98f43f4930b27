"""The version of the redaction rules, stored with every capture.

Bump it whenever a detector, a name list or a value check changes, so a
capture says which rules cleaned it (and an importer can tell stale ones).
"""

RULESET_VERSION = "creds-2026.11.1"
