-- One conversation stored once (store::copies). A transcript held by several machines (the
-- same session id and agent id in several `files` rows) was stored once per copy: its
-- messages twice in text and search, its episodes twice. Fold the copies as ingest now keeps
-- them apart: for each key within a transcript (a message's line uuid; a line without one: its
-- kind, subtype, time, line number and text; an episode's first-prompt time, or its first
-- line) the row of the lowest file id stays, the others go, with their search entries. The
-- sessions' message counters lose what was removed. A store without copies changes nothing
-- (every statement below starts from `copy_files`, found through the session index).

CREATE TEMP TABLE copy_files AS
SELECT f.id, f.session_id FROM files f
WHERE f.session_id IS NOT NULL AND (f.kind = 'main' OR f.agent_id IS NOT NULL)
  AND EXISTS (SELECT 1 FROM files o WHERE o.session_id = f.session_id AND o.kind = f.kind
      AND COALESCE(o.agent_id, '') = COALESCE(f.agent_id, '') AND o.id < f.id);

CREATE TEMP TABLE copy_rows AS
SELECT id, file_id, generation, line_no, seq, session_id FROM (
    SELECT m.id, m.file_id, m.generation, m.line_no, m.seq, f.session_id,
        ROW_NUMBER() OVER (PARTITION BY f.session_id, f.kind, COALESCE(f.agent_id, ''), m.uuid,
            CASE WHEN m.uuid IS NULL THEN m.kind END,
            CASE WHEN m.uuid IS NULL THEN m.subtype END,
            CASE WHEN m.uuid IS NULL THEN m.ts END,
            CASE WHEN m.uuid IS NULL THEN m.line_no END,
            CASE WHEN m.uuid IS NULL THEN m.text END
            ORDER BY m.file_id, m.line_no, m.seq) AS n
    FROM files f JOIN messages m ON m.file_id = f.id AND m.generation = f.generation
    WHERE f.session_id IN (SELECT session_id FROM copy_files)
      AND (f.kind = 'main' OR f.agent_id IS NOT NULL)
) WHERE n > 1 AND file_id IN (SELECT id FROM copy_files);

-- Their words leave the full-text index (an external-content table: the text deleted must be
-- the text indexed), then their documents, then the rows.
CREATE TEMP TABLE copy_docs AS
SELECT d.id, m.text FROM search_docs d
JOIN copy_rows c ON c.file_id = d.file_id AND c.generation = d.generation
    AND c.line_no = d.line_no AND c.seq = d.seq
JOIN messages m ON m.id = c.id
WHERE EXISTS (SELECT 1 FROM copy_rows) AND d.kind = 'message';
INSERT INTO search_fts (search_fts, rowid, body) SELECT 'delete', id, text FROM copy_docs;
DELETE FROM search_docs WHERE id IN (SELECT id FROM copy_docs);
DELETE FROM messages WHERE id IN (SELECT id FROM copy_rows);
UPDATE sessions SET message_count = MAX(0, message_count
    - (SELECT COUNT(*) FROM copy_rows c WHERE c.session_id = sessions.session_id))
WHERE session_id IN (SELECT session_id FROM copy_rows);

-- Episodes held twice: the one that reaches furthest (more turns, then more lines; then the
-- lowest file) stays, as ingest now keeps it; snippets follow it, the others' refinements go.
CREATE TEMP TABLE copy_episodes AS
SELECT id, keep_id FROM (
    SELECT e.id, ROW_NUMBER() OVER w AS n, FIRST_VALUE(e.id) OVER w AS keep_id
    FROM episodes e JOIN files f ON f.id = e.file_id AND f.generation = e.generation
    WHERE e.session_id IN (SELECT session_id FROM copy_files)
    WINDOW w AS (PARTITION BY e.session_id, COALESCE(e.started_at, '@' || e.start_line)
        ORDER BY e.turns DESC, e.end_line - e.start_line DESC, e.file_id, e.id)
) WHERE n > 1;
UPDATE snippets SET episode_id = (SELECT keep_id FROM copy_episodes c WHERE c.id = snippets.episode_id)
WHERE episode_id IN (SELECT id FROM copy_episodes);
DELETE FROM refinements WHERE episode_id IN (SELECT id FROM copy_episodes);
DELETE FROM episodes WHERE id IN (SELECT id FROM copy_episodes);

DROP TABLE copy_episodes;
DROP TABLE copy_docs;
DROP TABLE copy_rows;
DROP TABLE copy_files;
