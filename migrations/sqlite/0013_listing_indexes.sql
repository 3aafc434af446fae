-- Indexes for the listings of the query layer: each listing pages (LIMIT/OFFSET) over one of
-- these orders, so a page costs the same on any size of store. Newest first is
-- `x DESC NULLS LAST`, which SQLite serves by walking an ascending index backwards.
CREATE INDEX IF NOT EXISTS sessions_recent ON sessions (last_activity_at, session_id);
CREATE INDEX IF NOT EXISTS sessions_project ON sessions (project);
CREATE INDEX IF NOT EXISTS summaries_ts ON summaries (ts, id);
CREATE INDEX IF NOT EXISTS summaries_leaf ON summaries (leaf_uuid) WHERE leaf_uuid IS NOT NULL;
CREATE INDEX IF NOT EXISTS summary_leaves_session ON summary_leaves (session_id);
CREATE INDEX IF NOT EXISTS feedback_ts ON feedback (ts, id);
CREATE INDEX IF NOT EXISTS episodes_recent ON episodes (started_at, id);
