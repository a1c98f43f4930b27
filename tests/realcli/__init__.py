"""Opt-in end-to-end tier: real coding CLIs recorded by `ctxtap record` in a loopback-only namespace."""
