"""`python -m ctxtap.cli`."""

from ctxtap.cli.main import main

main()
