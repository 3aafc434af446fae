-- Full-text search over what Gleaner keeps: user and assistant message text, summaries (all
-- three kinds), feedback and snippets. Each table gets a generated tsvector column (english
-- configuration: stemmed, stop words dropped) and a GIN index on it. Generated columns are
-- computed by the INSERT itself, so the index is written in the same transaction as its rows,
-- and adding them computes them for every existing row (the backfill).
-- ts_rank_cd needs no corpus statistics, so scores of different tables compare directly.

-- Lines Claude Code injects (isMeta, compaction summaries in user lines): kept as rows, left
-- out of search and of conversation text. Rows stored before this column existed read false.
ALTER TABLE messages ADD COLUMN is_meta BOOLEAN NOT NULL DEFAULT FALSE;

ALTER TABLE messages ADD COLUMN search_vec tsvector GENERATED ALWAYS AS (
    CASE WHEN text IS NOT NULL AND kind IN ('user', 'assistant') AND NOT is_meta
    THEN to_tsvector('english', text) END
) STORED;
CREATE INDEX messages_search ON messages USING GIN (search_vec);

ALTER TABLE summaries ADD COLUMN search_vec tsvector GENERATED ALWAYS AS (
    CASE WHEN text IS NOT NULL THEN to_tsvector('english', text) END
) STORED;
CREATE INDEX summaries_search ON summaries USING GIN (search_vec);

ALTER TABLE feedback ADD COLUMN search_vec tsvector GENERATED ALWAYS AS (
    to_tsvector('english', content || COALESCE(E'\n' || reason, ''))
) STORED;
CREATE INDEX feedback_search ON feedback USING GIN (search_vec);

ALTER TABLE snippets ADD COLUMN search_vec tsvector GENERATED ALWAYS AS (
    to_tsvector('english', title || E'\n' || content)
) STORED;
CREATE INDEX snippets_search ON snippets USING GIN (search_vec);
