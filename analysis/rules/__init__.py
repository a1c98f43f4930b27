"""Rule engines: attribution of blocks and segments, detectors, evidence, constraints and gates."""
