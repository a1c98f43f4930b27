-- network: every non-model destination the run reached through the proxy (host, method, path),
-- with counts, bytes and statuses. Only traffic sent through the proxy is seen: DNS look-ups, raw
-- sockets, ssh and clients that ignore the proxy settings are not, so an empty view does not
-- prove a run stayed offline.
CREATE OR REPLACE VIEW network AS SELECT * FROM t_network;

-- network_hosts: the same, one row per host.
CREATE OR REPLACE VIEW network_hosts AS
SELECT
    capture_id, host,
    string_agg(DISTINCT category, ', ' ORDER BY category) AS categories,
    bool_or(is_provider_host) AS is_provider_host,
    sum(n_flows) AS n_flows,
    count(*) AS n_paths,
    sum(request_bytes) AS request_bytes,
    sum(response_bytes) AS response_bytes,
    min(first_ts) AS first_ts,
    max(last_ts) AS last_ts
FROM t_network
GROUP BY capture_id, host;
