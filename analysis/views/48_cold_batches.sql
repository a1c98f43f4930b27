-- cold_batches: requests that started while another request with the same prefix was still in
-- flight (its cache write had not landed), so each paid for the prefix again: one row per request
-- of a batch (the writer, then its members), with n_in_batch and the batch's extra cost beside each.
CREATE OR REPLACE VIEW cold_batches AS
SELECT *,
    count(*) OVER batch AS n_in_batch,
    sum(extra_cost_usd) OVER batch AS batch_extra_cost_usd,
    sum(unread_tokens) OVER batch AS batch_unread_tokens
FROM t_cold_batches
WINDOW batch AS (PARTITION BY capture_id, batch_id);
