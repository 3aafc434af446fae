-- Full-text search over what Gleaner keeps: user and assistant message text, summaries (all
-- three kinds), feedback and snippets, in ONE FTS5 index so that BM25 scores compare across
-- kinds (one corpus, one set of statistics).
--
-- Why external content through a view: the texts already live in their tables; the index
-- stores only its inverted lists, and `snippet()`/`highlight()` read the text back through
-- `search_content` for the few rows a page shows. `messages` has no rowid (WITHOUT ROWID), so
-- every indexed text gets a row in `search_docs` whose id is the index's rowid and which
-- carries what the filters need (kind, session, time) and where the text comes from.
-- The index is written in the same transaction as the rows (by triggers, and for messages by
-- the writer's own statements).

-- Lines Claude Code injects (isMeta, compaction summaries in user lines): kept as rows, left
-- out of search and of conversation text. Rows stored before this column existed read 0.
ALTER TABLE messages ADD COLUMN is_meta INTEGER NOT NULL DEFAULT 0;

CREATE TABLE search_docs (
    id         INTEGER PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('message', 'summary', 'feedback', 'snippet')),
    session_id TEXT    NOT NULL,
    -- The line's timestamp; a snippet's created_at.
    ts         TEXT,
    -- message: its key; summary, feedback: the file and line; snippet: none (its source file
    -- is a column of the snippet).
    file_id    INTEGER,
    generation INTEGER,
    line_no    INTEGER,
    seq        INTEGER,
    -- summaries.id, feedback.id or snippets.id.
    ref_id     INTEGER
);
CREATE INDEX search_docs_ref ON search_docs (kind, ref_id) WHERE ref_id IS NOT NULL;

CREATE VIEW search_content (id, body) AS
SELECT d.id, CASE d.kind
    WHEN 'message' THEN (SELECT m.text FROM messages m WHERE m.file_id = d.file_id
        AND m.generation = d.generation AND m.line_no = d.line_no AND m.seq = d.seq)
    WHEN 'summary' THEN (SELECT s.text FROM summaries s WHERE s.id = d.ref_id)
    WHEN 'feedback' THEN (SELECT f.content || COALESCE(char(10) || f.reason, '')
        FROM feedback f WHERE f.id = d.ref_id)
    WHEN 'snippet' THEN (SELECT sn.title || char(10) || sn.content
        FROM snippets sn WHERE sn.id = d.ref_id)
    END
FROM search_docs d;

-- porter: "migrations" finds "migration" (as PostgreSQL's english configuration does).
CREATE VIRTUAL TABLE search_fts USING fts5 (
    body, content = 'search_content', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Merge segments 16 at a time instead of 4: every transaction flushes a segment, and merging
-- them in smaller steps was a tenth of the index's cost to ingest (measured); queries read a
-- few more segments (still a millisecond or two).
INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 16);

-- Messages are indexed by the writer itself (store::commit::index_messages), in multi-row
-- statements in the same transaction as the rows: a trigger per message row cost twice as much
-- (measured). Summaries, feedback and snippets are few: triggers index them.

CREATE TRIGGER summaries_search AFTER INSERT ON summaries WHEN new.text IS NOT NULL BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
        VALUES ('summary', new.session_id, new.ts, new.file_id, new.line_no, new.id);
    INSERT INTO search_fts (rowid, body) VALUES (last_insert_rowid(), new.text);
END;

CREATE TRIGGER feedback_search AFTER INSERT ON feedback BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
        VALUES ('feedback', new.session_id, new.ts, new.file_id, new.line_no, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(), new.content || COALESCE(char(10) || new.reason, ''));
END;

CREATE TRIGGER snippets_search AFTER INSERT ON snippets BEGIN
    INSERT INTO search_docs (kind, session_id, ts, ref_id)
        VALUES ('snippet', new.session_id, new.created_at, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(), new.title || char(10) || new.content);
END;

-- A re-closed episode replaces its automatic snippets: their words leave the index.
CREATE TRIGGER snippets_search_delete AFTER DELETE ON snippets BEGIN
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, old.title || char(10) || old.content
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    DELETE FROM search_docs WHERE kind = 'snippet' AND ref_id = old.id;
END;

-- Backfill what existing databases hold, then build the index from the view.
INSERT INTO search_docs (kind, session_id, ts, file_id, generation, line_no, seq)
    SELECT 'message', session_id, ts, file_id, generation, line_no, seq FROM messages
    WHERE text IS NOT NULL AND kind IN ('user', 'assistant');
INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
    SELECT 'summary', session_id, ts, file_id, line_no, id FROM summaries WHERE text IS NOT NULL;
INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
    SELECT 'feedback', session_id, ts, file_id, line_no, id FROM feedback;
INSERT INTO search_docs (kind, session_id, ts, ref_id)
    SELECT 'snippet', session_id, created_at, id FROM snippets;
INSERT INTO search_fts (search_fts) VALUES ('rebuild');
