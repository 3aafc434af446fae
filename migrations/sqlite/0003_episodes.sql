-- Episodes (runs of turns about one task, with a triage label) and snippets (short, sourced
-- pieces of reasoning), plus the episode builder's state checkpointed with each file.

-- JSON state of the episode builder of a main transcript, written in the same transaction as
-- the file's checkpoint so a restart resumes the open episode exactly where the rows stop.
ALTER TABLE files ADD COLUMN episode_state TEXT;

CREATE TABLE episodes (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT    NOT NULL,
    file_id       INTEGER NOT NULL REFERENCES files (id),
    generation    INTEGER NOT NULL,
    -- 1-based position of the episode in its file, and of its first turn.
    ordinal       INTEGER NOT NULL,
    first_turn    INTEGER NOT NULL,
    turns         INTEGER NOT NULL,
    -- Physical lines: from the first prompt to the line before the next episode's first prompt
    -- (the last episode: to the end of the file as read so far). Consecutive ranges touch.
    start_line    INTEGER NOT NULL CHECK (start_line >= 1),
    end_line      INTEGER NOT NULL,
    started_at    TEXT,
    ended_at      TEXT,
    status        TEXT    NOT NULL CHECK (status IN ('open', 'closed')),
    -- What started it: start, compaction, idle_gap, topic or window.
    cut_reason    TEXT    NOT NULL,
    triage        TEXT    NOT NULL CHECK (triage IN
                    ('routine', 'error_recovery', 'user_correction', 'pivot', 'design_decision')),
    confidence    REAL    NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    -- JSON: [{"line": n, "signal": "...", "label": "...", "text": "..."}]
    evidence      TEXT    NOT NULL,
    title         TEXT,
    -- JSON arrays / object: files touched, tool call counts, linked sub-agents.
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
    -- AUTOINCREMENT: an id is a handle people and agents quote; a re-closed episode deletes
    -- stale snippets, and a deleted id must never come back naming other content.
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT    NOT NULL,
    episode_id    INTEGER REFERENCES episodes (id),
    origin        TEXT    NOT NULL CHECK (origin IN ('auto', 'manual')),
    snippet_type  TEXT    NOT NULL CHECK (snippet_type IN
                    ('error_reasoning', 'decision_rationale', 'learning_pattern')),
    title         TEXT    NOT NULL CHECK (length(title) BETWEEN 1 AND 256),
    content       TEXT    NOT NULL CHECK (length(CAST(content AS BLOB)) BETWEEN 100 AND 10240),
    -- xxh3 of the normalized content (lowercase, whitespace collapsed), hex.
    content_hash  TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    source_file   TEXT    NOT NULL,
    line_start    INTEGER NOT NULL CHECK (line_start >= 1),
    line_end      INTEGER NOT NULL,
    -- JSON array of tags (also in snippet_tags, for filtering).
    tags          TEXT    NOT NULL,
    -- JSON object: word_count, reading_time_s, triage, confidence, version, ...
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
    tag        TEXT    NOT NULL,
    snippet_id INTEGER NOT NULL REFERENCES snippets (id),
    PRIMARY KEY (tag, snippet_id)
) WITHOUT ROWID;
-- Deleting a snippet (a re-closed episode replaces its automatic ones) deletes its tags.
CREATE INDEX snippet_tags_snippet ON snippet_tags (snippet_id);

-- Substring search over title and content (`snippets --keyword`): trigram index, kept in step
-- with the table by triggers.
CREATE VIRTUAL TABLE snippets_fts USING fts5 (
    title, content, content = 'snippets', content_rowid = 'id', tokenize = 'trigram'
);
CREATE TRIGGER snippets_fts_insert AFTER INSERT ON snippets BEGIN
    INSERT INTO snippets_fts (rowid, title, content) VALUES (new.id, new.title, new.content);
END;
CREATE TRIGGER snippets_fts_delete AFTER DELETE ON snippets BEGIN
    INSERT INTO snippets_fts (snippets_fts, rowid, title, content)
        VALUES ('delete', old.id, old.title, old.content);
    DELETE FROM snippet_tags WHERE snippet_id = old.id;
END;
