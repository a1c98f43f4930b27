"""The version of the redaction rules, stored with every capture.

Bump it whenever a detector, a name list or a value check changes, so a
capture says which rules cleaned it (and an importer can tell stale ones).
"""

RULESET_VERSION = "creds-2026.12.35"

# The vendored gitleaks rule set these rules include (see redaction/rules/README.md).
GITLEAKS_VERSION = "v8.30.0-27-gb58d3f10"

# The vendored Kingfisher catalogue (redaction/rules/kingfisher.json, its header says the same).
KINGFISHER_VERSION = "v1.10.0"
