"""CSS and JavaScript inlined into every report (a package so they ship as package data)."""
