"""Jinja2 templates of the HTML report (a package so they ship as package data)."""
