-- Summaries, user feedback, tool calls, token usage and the session lifecycle.

ALTER TABLE sessions ADD COLUMN status TEXT NOT NULL DEFAULT 'active'
    CHECK (status IN ('active', 'finished'));
ALTER TABLE sessions ADD COLUMN ended_at TEXT;
ALTER TABLE sessions ADD COLUMN duration_ms BIGINT;
ALTER TABLE sessions ADD COLUMN end_reason TEXT;
ALTER TABLE sessions ADD COLUMN slug TEXT;

-- Modification time seen at the last commit: a session is idle when none of its files grew.
ALTER TABLE files ADD COLUMN mtime_ms BIGINT  NOT NULL DEFAULT 0;
-- From the sub-agent's `agent-<id>.meta.json` sidecar, when present.
ALTER TABLE files ADD COLUMN agent_type TEXT;
ALTER TABLE files ADD COLUMN agent_description TEXT;

-- 64-bit hash of the line uuid, for finding the message a summary's leafUuid names. Not
-- indexed: an index over every message's uuid cost a third of SQLite's ingest rate, for a lookup
-- only `summary` lines (Claude Code <= 2.1.23) need. See summary_leaves.
ALTER TABLE messages ADD COLUMN uuid_key BIGINT;

-- Which session holds the message a summary's leafUuid names. Filled by the writer: when a
-- summary with a new leaf arrives (one scan of its project's messages by uuid_key), and when a
-- committed message matches a known leaf (the writer keeps the leaf keys in memory).
CREATE TABLE summary_leaves (
    leaf_uuid  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (leaf_uuid, session_id)
);

CREATE TABLE summaries (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            TEXT    NOT NULL CHECK (kind IN ('summary', 'compact_boundary', 'compact_summary')),
    -- (leaf_uuid, text) for `summary`; the line uuid for the compact kinds.
    dedup_key       TEXT    NOT NULL,
    text            TEXT,
    leaf_uuid       TEXT,
    leaf_key        BIGINT,
    uuid            TEXT,
    compact_trigger TEXT,
    pre_tokens      BIGINT,
    -- The file's session; queries prefer the session holding the message `leaf_uuid` names.
    session_id      TEXT    NOT NULL,
    agent_id        TEXT,
    ts              TEXT,
    file_id         BIGINT  NOT NULL REFERENCES files (id),
    line_no         BIGINT  NOT NULL,
    UNIQUE (kind, dedup_key)
);
CREATE INDEX summaries_session ON summaries (session_id);

CREATE TABLE feedback (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Line uuid + type + block or tool_use_id: a line copied into a resumed session counts once.
    dedup_key     TEXT    NOT NULL UNIQUE,
    ts            TEXT,
    session_id    TEXT    NOT NULL,
    feedback_type TEXT    NOT NULL CHECK (feedback_type IN ('message', 'tool_denial', 'interruption')),
    content       TEXT    NOT NULL,
    reason        TEXT,
    agent_id      TEXT,
    slug          TEXT,
    tool_use_id   TEXT,
    uuid          TEXT,
    file_id       BIGINT  NOT NULL REFERENCES files (id),
    line_no       BIGINT  NOT NULL
);
CREATE INDEX feedback_session ON feedback (session_id, ts);

-- One row per tool call (keyed by its id, so resumed copies count once); `is_error` is set by
-- the matching tool_result.
CREATE TABLE tool_uses (
    tool_use_id TEXT    PRIMARY KEY,
    session_id  TEXT    NOT NULL,
    name        TEXT,
    target      TEXT,
    ts          TEXT,
    is_error    BOOLEAN NOT NULL DEFAULT FALSE,
    file_id     BIGINT  NOT NULL REFERENCES files (id),
    line_no     BIGINT  NOT NULL
);
CREATE INDEX tool_uses_session ON tool_uses (session_id);

-- Token usage once per API message id (one reply spans several lines that repeat `usage`).
CREATE TABLE assistant_usage (
    message_id                  TEXT    PRIMARY KEY,
    session_id                  TEXT    NOT NULL,
    input_tokens                BIGINT  NOT NULL,
    output_tokens               BIGINT  NOT NULL,
    cache_creation_input_tokens BIGINT  NOT NULL,
    cache_read_input_tokens     BIGINT  NOT NULL
);
CREATE INDEX assistant_usage_session ON assistant_usage (session_id);
