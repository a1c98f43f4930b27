-- events: the run's minimum trace, one row per event in session order (task_started,
-- model_requested/responded, tool_requested, permission_decided, tool_started/finished,
-- tool_result_returned, task_finished), each with the evidence it rests on: `wire`,
-- `client-telemetry` (the client's own OTLP or vendor events) or `inferred` (a time written
-- in a result, or only the call->result gap, named in evidence_detail).
CREATE OR REPLACE VIEW events AS SELECT * FROM t_events;
