-- An automatic snippet keeps its id when its source gives it again (a re-extraction, an
-- episode closed again): its row is rewritten in place (`store::episodes::reuse_snippet`).
-- The lookup of that earlier row by its source:
CREATE INDEX IF NOT EXISTS snippets_source ON snippets (session_id, source_file, line_start)
    WHERE origin = 'auto';
