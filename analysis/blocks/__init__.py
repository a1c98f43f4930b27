"""Blocks and segments: content-addressed blocks, the sections inside them, and how they change."""
