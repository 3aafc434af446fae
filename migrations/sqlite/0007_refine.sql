-- Optional refinement by a user-chosen command (`[refine] command`): snippets it writes have
-- origin 'refined', and each episode it handled is recorded once in `refinements`.
--
-- SQLite cannot alter a CHECK constraint, so `snippets` is rebuilt: same columns, same rows and
-- ids, the AUTOINCREMENT high-water mark kept (a deleted id never comes back), then its indexes
-- and triggers recreated as 0003/0004 made them. The search view is dropped and recreated
-- around the rename (a rename checks every view, and this one names the table being swapped).

CREATE TABLE snippets_v7 (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT    NOT NULL,
    episode_id    INTEGER REFERENCES episodes (id),
    origin        TEXT    NOT NULL CHECK (origin IN ('auto', 'manual', 'refined')),
    snippet_type  TEXT    NOT NULL CHECK (snippet_type IN
                    ('error_reasoning', 'decision_rationale', 'learning_pattern')),
    title         TEXT    NOT NULL CHECK (length(title) BETWEEN 1 AND 256),
    content       TEXT    NOT NULL CHECK (length(CAST(content AS BLOB)) BETWEEN 100 AND 10240),
    content_hash  TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    source_file   TEXT    NOT NULL,
    line_start    INTEGER NOT NULL CHECK (line_start >= 1),
    line_end      INTEGER NOT NULL,
    tags          TEXT    NOT NULL,
    metadata      TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    CHECK (line_end >= line_start),
    UNIQUE (session_id, content_hash)
);
INSERT INTO snippets_v7 SELECT * FROM snippets;
CREATE TEMP TABLE snippets_seq AS SELECT seq FROM sqlite_sequence WHERE name = 'snippets';

DROP VIEW search_content;
DROP TABLE snippets;
ALTER TABLE snippets_v7 RENAME TO snippets;
UPDATE sqlite_sequence SET seq = max(seq, COALESCE((SELECT seq FROM snippets_seq), 0))
    WHERE name = 'snippets';
DROP TABLE snippets_seq;

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

CREATE INDEX snippets_listing ON snippets (created_at, id, session_id, snippet_type);
CREATE INDEX snippets_session ON snippets (session_id, created_at, id);
CREATE INDEX snippets_episode ON snippets (episode_id);

CREATE TRIGGER snippets_fts_insert AFTER INSERT ON snippets BEGIN
    INSERT INTO snippets_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
END;
CREATE TRIGGER snippets_fts_delete AFTER DELETE ON snippets BEGIN
    INSERT INTO snippets_fts (snippets_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
    DELETE FROM snippet_tags WHERE snippet_id = old.id;
END;
CREATE TRIGGER snippets_search AFTER INSERT ON snippets BEGIN
    INSERT INTO search_docs (kind, session_id, ts, ref_id)
        VALUES ('snippet', new.session_id, new.created_at, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(), new.title || char(10) || new.content);
END;
CREATE TRIGGER snippets_search_delete AFTER DELETE ON snippets BEGIN
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, old.title || char(10) || old.content
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    DELETE FROM search_docs WHERE kind = 'snippet' AND ref_id = old.id;
END;

-- One row per episode the refine command handled: done (with how many learnings it stored) or
-- failed (with the reason, retried up to `[refine] max_attempts`).
CREATE TABLE refinements (
    episode_id  INTEGER PRIMARY KEY REFERENCES episodes (id),
    state       TEXT    NOT NULL CHECK (state IN ('done', 'failed')),
    attempts    INTEGER NOT NULL,
    learnings   INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    updated_at  TEXT    NOT NULL
);
