-- call_effects: the effect class of every proposed tool call (read, write, execute, network, destructive;
-- unknown without evidence), its rules, and whether the paths it names are inside the working directory.
-- call_effect_paths: one row per path a proposed call names, resolved against the working directory.
-- effect_calls: the proposed writes joined to the effect receipt, both sides kept. Columns: capture_id,
-- session_id, request_id, call_id, name (the tool), effect_class, check_status (the call's checked status),
-- path (as the call named it), access (write or destructive), rule, proposed_path (resolved, absolute),
-- inside_workspace, root_kind, rel_path, change (the receipt's created/modified/deleted/renamed),
-- renamed_from, and verdict: `proposed_and_happened` (the receipt shows the change), `proposed_not_seen`
-- (the path was snapshotted and did not change: the call was denied, failed, or wrote the same bytes),
-- `proposed_not_covered` (no receipt, or the path is outside every snapshotted place), `proposed_unresolved`
-- (the path could not be resolved: a `$VAR`, no working directory), `unproposed` (a change no call named;
-- unnamed_writers lists calls that write without naming a path, such as `npm install`, and named_by the calls
-- that named the path without proposing a write of it: a read, a script, a tool of unknown class).
-- A directory or glob a call names matches the changes under it.
CREATE OR REPLACE VIEW call_effects AS SELECT * FROM t_call_effects;

CREATE OR REPLACE VIEW call_effect_paths AS SELECT * FROM t_call_effect_paths;

CREATE OR REPLACE VIEW effect_calls AS
WITH proposed AS (
    SELECT p.*, c.effect_class, t.check_status
    FROM t_call_effect_paths p
    JOIN t_call_effects c
      ON c.capture_id = p.capture_id AND c.request_id = p.request_id AND c.call_id = p.call_id
    LEFT JOIN t_tool_calls t
      ON t.capture_id = p.capture_id AND t.request_id = p.request_id AND t.call_id = p.call_id
    WHERE p.access IN ('write', 'destructive') AND NOT coalesce(starts_with(p.resolved_path, '/dev/'), false)
),
receipt AS (
    SELECT e.*, rtrim(e.root, '/') || '/' || e.rel_path AS abs_path,
           CASE WHEN e.renamed_from IS NOT NULL THEN rtrim(e.root, '/') || '/' || e.renamed_from END AS abs_from
    FROM t_effects e
),
unnamed AS (
    SELECT capture_id, string_agg(DISTINCT name || ' ' || call_id, ', ') AS calls
    FROM t_call_effects
    WHERE effect_class IN ('write', 'destructive') AND NOT writes_inside AND NOT writes_outside
    GROUP BY capture_id
),
matched AS (
    SELECT p.capture_id AS p_capture, p.session_id, p.request_id, p.call_id, p.name, p.effect_class,
           p.check_status, p.path, p.access, p.rule, p.resolved_path AS proposed_path, p.inside_workspace,
           r.capture_id AS r_capture, r.root, r.root_kind, r.rel_path, r.change, r.renamed_from, r.abs_path
    FROM proposed p
    FULL OUTER JOIN receipt r
      ON r.capture_id = p.capture_id AND p.resolved_path IS NOT NULL
     AND (r.abs_path = p.resolved_path OR r.abs_from = p.resolved_path
          OR starts_with(r.abs_path, rtrim(p.resolved_path, '/') || '/')
          OR (p.is_glob AND (r.abs_path GLOB p.resolved_path OR r.abs_from GLOB p.resolved_path)))
)
SELECT coalesce(m.p_capture, m.r_capture) AS capture_id, m.session_id, m.request_id, m.call_id, m.name,
       m.effect_class, m.check_status, m.path, m.access, m.rule, m.proposed_path,
       coalesce(m.inside_workspace, m.root_kind = 'workspace') AS inside_workspace,
       m.root_kind, m.rel_path, m.change, m.renamed_from,
       CASE WHEN m.call_id IS NULL THEN 'unproposed'
            WHEN m.change IS NOT NULL THEN 'proposed_and_happened'
            WHEN m.proposed_path IS NULL THEN 'proposed_unresolved'
            WHEN EXISTS (SELECT 1 FROM t_effect_roots s
                         WHERE s.capture_id = m.p_capture
                           AND (m.proposed_path = rtrim(s.root, '/')
                                OR starts_with(m.proposed_path, rtrim(s.root, '/') || '/')))
                 THEN 'proposed_not_seen'
            ELSE 'proposed_not_covered' END AS verdict,
       CASE WHEN m.call_id IS NULL THEN u.calls END AS unnamed_writers,
       CASE WHEN m.call_id IS NULL THEN (
           SELECT string_agg(DISTINCT n.name || ' ' || n.call_id || ' (' || n.access || ')', ', ')
           FROM t_call_effect_paths n
           WHERE n.capture_id = m.r_capture AND n.access NOT IN ('write', 'destructive')
             AND n.access <> 'cwd' AND n.resolved_path = m.abs_path)
       END AS named_by
FROM matched m
LEFT JOIN unnamed u ON u.capture_id = m.r_capture;
