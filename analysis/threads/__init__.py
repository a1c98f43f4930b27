"""Sessions, threads and turns, and what happened in them: identity, purpose, the tool loop, errors."""
