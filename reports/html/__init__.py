"""HTML reports: DuckDB views -> report context -> jinja2 templates -> one self-contained file.

Reports read the analysis views only; they never import capture, proxy or redaction code.
"""
