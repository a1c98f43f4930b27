"""Replay a capture: answer a CLI's model requests with the recorded responses (a cassette),
or re-send a recorded request sequence to a provider with a changed layout.

A layer of its own between analysis and the command line: it reads captures (`ctxtap.capture`),
parses and compares requests with the analysis layer's protocols and diff engine, and drives the
recording proxy (`proxy_addons.runner`) so that every replayed run is itself a capture.
"""
