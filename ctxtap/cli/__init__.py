"""The command line: one click group (`main`), with report, publish and demo loaded on use."""
