-- Full-text search over what Gleaner keeps: user and assistant message text, summaries (all
-- three kinds), feedback and snippets. Each table gets a `search_vec` tsvector column and a GIN
-- index on it, written by the same INSERT as the row, so the index commits with the file's
-- checkpoint.
--
-- Why not a generated column `to_tsvector('english', text)`: the server's text parser cost
-- more than a third of ingest throughput, in series on the writer's one connection. Gleaner
-- finds the words itself on its reading threads (src/extract/lexemes.rs: letters and digits,
-- lower case, PostgreSQL's english stop words, the Snowball English stemmer that
-- `english_stem` uses) and the server only reads the tsvector literal; queries are turned into
-- lexemes by the same code. ts_rank_cd needs no corpus statistics, so scores of different
-- tables compare directly.

-- Lines Claude Code injects (isMeta, compaction summaries in user lines): kept as rows, left
-- out of search and of conversation text. Rows stored before this column existed read false.
ALTER TABLE messages ADD COLUMN is_meta BOOLEAN NOT NULL DEFAULT FALSE;

ALTER TABLE messages ADD COLUMN search_vec tsvector;
ALTER TABLE summaries ADD COLUMN search_vec tsvector;
ALTER TABLE feedback ADD COLUMN search_vec tsvector;
ALTER TABLE snippets ADD COLUMN search_vec tsvector;

-- The backfill of rows stored before this migration uses the server's own english
-- configuration (SQL cannot run Gleaner's tokenizer): the same stems for ordinary words; the
-- server reads URLs, paths and hyphenated words as whole tokens too, so a search for a part of
-- one may miss it in these older rows.
UPDATE messages SET search_vec = to_tsvector('english', text)
    WHERE text IS NOT NULL AND kind IN ('user', 'assistant');
UPDATE summaries SET search_vec = to_tsvector('english', text) WHERE text IS NOT NULL;
UPDATE feedback SET search_vec = to_tsvector('english', content || COALESCE(E'\n' || reason, ''));
UPDATE snippets SET search_vec = to_tsvector('english', title || E'\n' || content);

-- Partial: most message rows (tool traffic, system lines) have no text to search, and GIN
-- would still insert a placeholder for each of them. `@@` is strict, so queries use these.
CREATE INDEX messages_search ON messages USING GIN (search_vec) WHERE search_vec IS NOT NULL;
CREATE INDEX summaries_search ON summaries USING GIN (search_vec) WHERE search_vec IS NOT NULL;
CREATE INDEX feedback_search ON feedback USING GIN (search_vec) WHERE search_vec IS NOT NULL;
CREATE INDEX snippets_search ON snippets USING GIN (search_vec) WHERE search_vec IS NOT NULL;
