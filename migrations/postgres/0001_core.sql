-- Core schema: files (also the ingest checkpoint), sessions, messages, diagnostics, record kinds.
-- Forward-only: never edit an applied migration; add a new numbered file instead.
-- Timestamps are ISO-8601 UTC text, as in the transcripts, so both backends compare them the same way.

CREATE TABLE files (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    machine       TEXT    NOT NULL,
    path          TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN ('main', 'agent')),
    session_id    TEXT,
    agent_id      TEXT,
    dev           BIGINT  NOT NULL DEFAULT 0,
    inode         BIGINT  NOT NULL DEFAULT 0,
    generation    BIGINT  NOT NULL DEFAULT 1,
    byte_offset   BIGINT  NOT NULL DEFAULT 0,
    lines         BIGINT  NOT NULL DEFAULT 0,
    size          BIGINT  NOT NULL DEFAULT 0,
    head_len      BIGINT  NOT NULL DEFAULT 0,
    head_hash     BIGINT  NOT NULL DEFAULT 0,
    tail_len      BIGINT  NOT NULL DEFAULT 0,
    tail_hash     BIGINT  NOT NULL DEFAULT 0,
    diagnostics   BIGINT  NOT NULL DEFAULT 0,
    state         TEXT    NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'gone')),
    first_seen_at TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    UNIQUE (machine, path)
);
CREATE INDEX files_session ON files (session_id);

CREATE TABLE sessions (
    session_id       TEXT PRIMARY KEY,
    machine          TEXT    NOT NULL,
    project          TEXT    NOT NULL,
    cwd              TEXT,
    git_branch       TEXT,
    version          TEXT,
    title            TEXT,
    started_at       TEXT,
    last_activity_at TEXT,
    message_count    BIGINT  NOT NULL DEFAULT 0,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);

-- Keyed by its natural key; a session's messages are found through files.session_id and this
-- key's file_id prefix, so no separate session index is needed.
CREATE TABLE messages (
    file_id      BIGINT  NOT NULL REFERENCES files (id),
    generation   BIGINT  NOT NULL,
    line_no      BIGINT  NOT NULL,
    seq          BIGINT  NOT NULL,
    byte_start   BIGINT  NOT NULL,
    byte_end     BIGINT  NOT NULL,
    session_id   TEXT    NOT NULL,
    uuid         TEXT,
    parent_uuid  TEXT,
    kind         TEXT    NOT NULL,
    subtype      TEXT,
    ts           TEXT,
    is_sidechain BOOLEAN NOT NULL,
    agent_id     TEXT,
    model        TEXT,
    tool_names   TEXT,
    is_error     BOOLEAN NOT NULL,
    text         TEXT,
    PRIMARY KEY (file_id, generation, line_no, seq)
);

CREATE TABLE diagnostics (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    file_id    BIGINT  NOT NULL REFERENCES files (id),
    generation BIGINT  NOT NULL,
    line_no    BIGINT  NOT NULL,
    byte_start BIGINT  NOT NULL,
    byte_len   BIGINT  NOT NULL,
    kind       TEXT    NOT NULL,
    detail     TEXT,
    created_at TEXT    NOT NULL,
    UNIQUE (file_id, generation, line_no, kind)
);

CREATE TABLE record_kinds (
    file_id    BIGINT  NOT NULL REFERENCES files (id),
    generation BIGINT  NOT NULL,
    category   TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    count      BIGINT  NOT NULL,
    PRIMARY KEY (file_id, generation, category, name)
);
