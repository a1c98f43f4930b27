"""Personal data, pseudonymised: apart from the credential detectors, which remove secrets.

A credential is removed; a person's name, e-mail, home path or host is replaced by a stable
placeholder (`<user-1>`, keyed `<user-3fa2c1>` at capture time) so a reader still sees what
repeats. `identity` learns who the recorded user is from the traffic, `pii_rules` finds where
personal data sits, `pii` replaces it (`--redact pii` at capture, and publish). They use the
credential side's spans, placeholders and URL-password reader, never the other way round.
"""
