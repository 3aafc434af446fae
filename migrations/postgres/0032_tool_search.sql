-- Search what tools did (issue 49): each tool call's name and target and a bounded part of its
-- result's text (extract::tools) are searchable as the kind 'tool'. Two vectors on the row,
-- one per document (the call at its line, the result at `result_line`), each with a GIN
-- index; `id` orders the rows as they were stored (a search takes each part's newest matches
-- by walking it backwards, as summaries by theirs) and names a row on a page of results.
-- Applying it again is harmless: each step checks what is already there.
ALTER TABLE tool_uses
    ADD COLUMN IF NOT EXISTS id BIGSERIAL,
    ADD COLUMN IF NOT EXISTS result_line BIGINT,
    ADD COLUMN IF NOT EXISTS result TEXT,
    ADD COLUMN IF NOT EXISTS call_vec tsvector,
    ADD COLUMN IF NOT EXISTS result_vec tsvector;
-- Rows stored before carry no vector and no result: the sessions' re-extraction fills them
-- (RULES_VERSION 7), as on SQLite.
