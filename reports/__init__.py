"""HTML reports: DuckDB views -> report context -> jinja2 templates -> one self-contained file.

Reports read the analysis dataset only; they never import proxy code.
"""
