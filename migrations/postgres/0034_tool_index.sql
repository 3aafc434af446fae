-- SQLite's tool documents moved to an index of their own (migrations/sqlite/0034); PostgreSQL
-- keeps tool vectors on `tool_uses` since 0032, apart from the other kinds already. Nothing to
-- do here: the pair keeps the two schemas' versions in step.
SELECT 1;
