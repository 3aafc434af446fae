-- Search what tools did (issue 49), the second half of 0032: the indexes of the tool rows'
-- ids and vectors. Applying it again is harmless.
CREATE UNIQUE INDEX IF NOT EXISTS tool_uses_id ON tool_uses (id);
CREATE INDEX IF NOT EXISTS tool_uses_call_vec ON tool_uses USING GIN (call_vec)
    WHERE call_vec IS NOT NULL;
CREATE INDEX IF NOT EXISTS tool_uses_result_vec ON tool_uses USING GIN (result_vec)
    WHERE result_vec IS NOT NULL;
