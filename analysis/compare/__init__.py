"""Comparison: two requests, two runs, an experiment's variants, the cross-client layout."""
