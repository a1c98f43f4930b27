-- tool_calls: every call the model proposed, linked to its result.
CREATE OR REPLACE VIEW tool_calls AS SELECT * FROM t_tool_calls;
