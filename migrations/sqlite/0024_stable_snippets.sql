-- An automatic snippet keeps its id when its source gives it again (a re-extraction, an
-- episode closed again): its row is rewritten in place (`store::episodes::reuse_snippet`), so
-- the search indexes follow an update as they follow an insert or a delete.
CREATE TRIGGER IF NOT EXISTS snippets_fts_update AFTER UPDATE OF title, content, created_at ON snippets BEGIN
    INSERT INTO snippets_fts (snippets_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO snippets_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
    INSERT INTO search_fts (search_fts, rowid, body)
        SELECT 'delete', d.id, old.title || char(10) || old.content
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = old.id;
    UPDATE search_docs SET ts = new.created_at WHERE kind = 'snippet' AND ref_id = new.id;
    INSERT INTO search_fts (rowid, body)
        SELECT d.id, new.title || char(10) || new.content
        FROM search_docs d WHERE d.kind = 'snippet' AND d.ref_id = new.id;
END;

-- The lookup of a snippet's earlier row by its source.
CREATE INDEX IF NOT EXISTS snippets_source ON snippets (session_id, source_file, line_start)
    WHERE origin = 'auto';
