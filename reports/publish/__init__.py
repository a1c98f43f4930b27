"""Publishable attachments: per-client Markdown/JSON with personal data pseudonymised.

Unlike the HTML report, publishing reads raw bodies from the capture and imports redaction
(pseudonymisation and the fail-closed final scan).
"""
