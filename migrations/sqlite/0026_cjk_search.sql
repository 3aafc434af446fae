-- Chinese and Japanese are written without spaces, and FTS5's `unicode61` tokenizer keeps a
-- run of Han, Hiragana or Katakana characters as one token: `修正` was not found in `幫我修正`.
-- The index now holds its texts through `gleaner_fts(text)` (a function Gleaner registers on
-- every connection it opens: `store::direct::register_functions`), which puts a zero-width
-- space between two such characters, so each is a token; a query's run of them is a phrase of
-- its characters (`extract::lexemes::words`), as PostgreSQL's lexemes are. Every text goes
-- through it: the content view (read by `snippet()` and by every 'delete'), the triggers,
-- and the writer's own message inserts (`store::messages`). Then the index is built again.
DROP VIEW IF EXISTS search_content;
CREATE VIEW search_content (id, body) AS
SELECT d.id, gleaner_fts(CASE d.kind
    WHEN 'message' THEN (SELECT m.text FROM messages m WHERE m.file_id = d.file_id
        AND m.generation = d.generation AND m.line_no = d.line_no AND m.seq = d.seq)
    WHEN 'summary' THEN (SELECT s.text FROM summaries s WHERE s.id = d.ref_id)
    WHEN 'feedback' THEN (SELECT f.content || COALESCE(char(10) || f.reason, '')
        FROM feedback f WHERE f.id = d.ref_id)
    WHEN 'snippet' THEN (SELECT sn.title || char(10) || sn.content
        FROM snippets sn WHERE sn.id = d.ref_id)
    END)
FROM search_docs d;

DROP TRIGGER IF EXISTS summaries_search;
CREATE TRIGGER summaries_search AFTER INSERT ON summaries WHEN new.text IS NOT NULL BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
        VALUES ('summary', new.session_id, new.ts, new.file_id, new.line_no, new.id);
    INSERT INTO search_fts (rowid, body) VALUES (last_insert_rowid(), gleaner_fts(new.text));
END;

DROP TRIGGER IF EXISTS feedback_search;
CREATE TRIGGER feedback_search AFTER INSERT ON feedback BEGIN
    INSERT INTO search_docs (kind, session_id, ts, file_id, line_no, ref_id)
        VALUES ('feedback', new.session_id, new.ts, new.file_id, new.line_no, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(),
                gleaner_fts(new.content || COALESCE(char(10) || new.reason, '')));
END;

DROP TRIGGER IF EXISTS snippets_search;
CREATE TRIGGER snippets_search AFTER INSERT ON snippets BEGIN
    INSERT INTO search_docs (kind, session_id, ts, ref_id)
        VALUES ('snippet', new.session_id, new.created_at, new.id);
    INSERT INTO search_fts (rowid, body)
        VALUES (last_insert_rowid(), gleaner_fts(new.title || char(10) || new.content));
END;

DROP TRIGGER IF EXISTS snippets_search_delete;
CREATE TRIGGER snippets_search_delete AFTER DELETE ON snippets BEGIN
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, gleaner_fts(old.title || char(10) || old.content)
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    DELETE FROM search_docs WHERE kind = 'snippet' AND ref_id = old.id;
END;

DROP TRIGGER IF EXISTS snippets_fts_update;
CREATE TRIGGER snippets_fts_update AFTER UPDATE OF title, content, created_at ON snippets BEGIN
    INSERT INTO snippets_fts (snippets_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO snippets_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, gleaner_fts(old.title || char(10) || old.content)
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    UPDATE search_docs SET ts = new.created_at WHERE kind = 'snippet' AND ref_id = new.id;
    INSERT INTO search_fts (rowid, body)
        SELECT d.id, gleaner_fts(new.title || char(10) || new.content)
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = new.id;
END;

INSERT INTO search_fts (search_fts) VALUES ('rebuild');
