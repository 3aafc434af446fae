-- A message's text may be stored as a zstd frame (issue 48, store::packed_text): the search
-- index's content view reads it through gleaner_text(), so excerpts and deletes see the text.
-- The rest of the view is 0033's.
DROP VIEW IF EXISTS search_content;

CREATE VIEW search_content (id, body) AS
SELECT d.id, gleaner_fts(CASE d.kind
    WHEN 'message' THEN (SELECT gleaner_text(m.text) FROM messages m WHERE m.file_id = d.file_id
        AND m.generation = d.generation AND m.line_no = d.line_no AND m.seq = d.seq)
    WHEN 'summary' THEN (SELECT s.text FROM summaries s WHERE s.id = d.ref_id)
    WHEN 'feedback' THEN (SELECT f.content || COALESCE(char(10) || f.reason, '')
        FROM feedback f WHERE f.id = d.ref_id)
    WHEN 'snippet' THEN (SELECT sn.title || char(10) || sn.content
        FROM snippets sn WHERE sn.id = d.ref_id)
    WHEN 'tool' THEN (SELECT CASE d.seq
            WHEN 0 THEN t.name || char(10) || t.target
            ELSE t.result END
        FROM tool_uses t WHERE t.id = d.ref_id)
    END)
FROM search_docs d;
