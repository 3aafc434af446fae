-- Re-extraction (issue 29): the version of the extraction rules (`extract::rows::RULES_VERSION`)
-- that produced each session's derived rows, the lowest when parts of it were read by different
-- versions. A table of its own rather than a column: created if missing, so applying it again
-- is harmless. Sessions stored before it were read by older rules: version 0.
CREATE TABLE IF NOT EXISTS session_rules (
    session_id    TEXT   PRIMARY KEY,
    rules_version BIGINT NOT NULL
);
INSERT INTO session_rules (session_id, rules_version)
SELECT session_id, 0 FROM sessions
ON CONFLICT (session_id) DO NOTHING;
CREATE INDEX IF NOT EXISTS session_rules_version ON session_rules (rules_version, session_id);
