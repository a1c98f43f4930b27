"""Experiments: one command repeated under variants, each run recorded into its own capture.

`spec.py` reads and checks the TOML spec; `runner.py` runs it through the recording proxy.
The directory format and the report live in `analysis.experiment`.
"""
