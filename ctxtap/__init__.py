"""ctxtap: see what coding agents actually send to their models."""

__version__ = "0.1.0"
