"""The live view: a local web UI over captures, finished or being recorded (see ARCHITECTURE.md)."""
