-- Episodes (runs of turns about one task, with a triage label) and snippets (short, sourced
-- pieces of reasoning), plus the episode builder's state checkpointed with each file.

-- JSON state of the episode builder of a main transcript, written in the same transaction as
-- the file's checkpoint so a restart resumes the open episode exactly where the rows stop.
ALTER TABLE files ADD COLUMN episode_state TEXT;

CREATE TABLE episodes (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id    TEXT    NOT NULL,
    file_id       BIGINT  NOT NULL REFERENCES files (id),
    generation    BIGINT  NOT NULL,
    ordinal       BIGINT  NOT NULL,
    first_turn    BIGINT  NOT NULL,
    turns         BIGINT  NOT NULL,
    start_line    BIGINT  NOT NULL CHECK (start_line >= 1),
    end_line      BIGINT  NOT NULL,
    started_at    TEXT,
    ended_at      TEXT,
    status        TEXT    NOT NULL CHECK (status IN ('open', 'closed')),
    cut_reason    TEXT    NOT NULL,
    triage        TEXT    NOT NULL CHECK (triage IN
                    ('routine', 'error_recovery', 'user_correction', 'pivot', 'design_decision')),
    confidence    DOUBLE PRECISION NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    evidence      TEXT    NOT NULL,
    title         TEXT,
    files_touched TEXT    NOT NULL,
    tools         TEXT    NOT NULL,
    agents        TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    CHECK (end_line >= start_line),
    UNIQUE (file_id, generation, start_line)
);
CREATE INDEX episodes_session ON episodes (session_id, start_line);

CREATE TABLE snippets (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id    TEXT    NOT NULL,
    episode_id    BIGINT  REFERENCES episodes (id),
    origin        TEXT    NOT NULL CHECK (origin IN ('auto', 'manual')),
    snippet_type  TEXT    NOT NULL CHECK (snippet_type IN
                    ('error_reasoning', 'decision_rationale', 'learning_pattern')),
    title         TEXT    NOT NULL CHECK (char_length(title) BETWEEN 1 AND 256),
    content       TEXT    NOT NULL CHECK (octet_length(content) BETWEEN 100 AND 10240),
    content_hash  TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    source_file   TEXT    NOT NULL,
    line_start    BIGINT  NOT NULL CHECK (line_start >= 1),
    line_end      BIGINT  NOT NULL,
    tags          TEXT    NOT NULL,
    metadata      TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    CHECK (line_end >= line_start),
    UNIQUE (session_id, content_hash)
);
-- `gleaner snippets` lists snippets newest first under any mix of filters, and counts all
-- matches. This index holds that order and the columns the filters read besides the text
-- (session, type; the id for tags and keyword), so a page walks it backwards and reads only
-- the rows it returns, and a count is an index-only scan instead of a pass over the texts.
CREATE INDEX snippets_listing ON snippets (created_at, id, session_id, snippet_type);
-- `--session` and `--project` (resolved to the sessions of the project): the session's
-- snippets in listing order, from the index alone.
CREATE INDEX snippets_session ON snippets (session_id, created_at, id);
CREATE INDEX snippets_episode ON snippets (episode_id);

CREATE TABLE snippet_tags (
    tag        TEXT   NOT NULL,
    snippet_id BIGINT NOT NULL REFERENCES snippets (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, snippet_id)
);
-- Deleting a snippet (a re-closed episode replaces its automatic ones) cascades here.
CREATE INDEX snippet_tags_snippet ON snippet_tags (snippet_id);

-- `--tag` filters on PostgreSQL: the tags as an array with a GIN index, so a tag condition is
-- a bitmap ANDed with the others (trigram, listing) before any row is read, instead of a join
-- after the text recheck (a tag + keyword + type + since query: 26 ms -> 9 ms at 100,000
-- snippets). Derived from the `tags` JSON column, so no writer can let the two disagree.
CREATE FUNCTION gleaner_tag_array(tags TEXT) RETURNS TEXT[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT COALESCE(ARRAY(SELECT json_array_elements_text(tags::json)), '{}') $$;
ALTER TABLE snippets ADD COLUMN tag_list TEXT[] GENERATED ALWAYS AS (gleaner_tag_array(tags)) STORED;
CREATE INDEX snippets_tag_list ON snippets USING gin (tag_list);

-- Substring search over title and content (`snippets --keyword`): a trigram index serves
-- ILIKE '%word%'. pg_trgm is a trusted extension (PostgreSQL 13+): any user allowed to create
-- objects in the database can enable it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX snippets_text_trgm ON snippets USING gin ((title || ' ' || content) gin_trgm_ops);
