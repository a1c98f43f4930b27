-- cache_verdicts: per request, the three witnesses of the prompt cache side by side: what the bytes
-- say changed against the baseline (bytes_change, bytes_cause), the provider's own diagnostics
-- (provider_outcome, provider_reason, provider_missed_tokens) and the client's claim from its
-- telemetry (client_claim), with agreement = agree | disagree | unknown and why (agreement_detail).
CREATE OR REPLACE VIEW cache_verdicts AS SELECT * FROM t_cache_verdicts;
