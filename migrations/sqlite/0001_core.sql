-- Core schema: files (also the ingest checkpoint), sessions, messages, diagnostics, record kinds.
-- Forward-only: never edit an applied migration; add a new numbered file instead.

CREATE TABLE files (
    id            INTEGER PRIMARY KEY,
    machine       TEXT    NOT NULL,
    path          TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    kind          TEXT    NOT NULL CHECK (kind IN ('main', 'agent')),
    session_id    TEXT,
    agent_id      TEXT,
    dev           INTEGER NOT NULL DEFAULT 0,
    inode         INTEGER NOT NULL DEFAULT 0,
    generation    INTEGER NOT NULL DEFAULT 1,
    byte_offset   INTEGER NOT NULL DEFAULT 0,
    lines         INTEGER NOT NULL DEFAULT 0,
    size          INTEGER NOT NULL DEFAULT 0,
    head_len      INTEGER NOT NULL DEFAULT 0,
    head_hash     INTEGER NOT NULL DEFAULT 0,
    tail_len      INTEGER NOT NULL DEFAULT 0,
    tail_hash     INTEGER NOT NULL DEFAULT 0,
    diagnostics   INTEGER NOT NULL DEFAULT 0,
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
    message_count    INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);

-- Keyed by its natural key (WITHOUT ROWID): one B-tree insert per row instead of a rowid table
-- plus a unique index. Rows of a file are contiguous, so a session's messages are found through
-- files.session_id and this key's file_id prefix; no separate session index is needed.
CREATE TABLE messages (
    file_id      INTEGER NOT NULL REFERENCES files (id),
    generation   INTEGER NOT NULL,
    line_no      INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    byte_start   INTEGER NOT NULL,
    byte_end     INTEGER NOT NULL,
    session_id   TEXT    NOT NULL,
    uuid         TEXT,
    parent_uuid  TEXT,
    kind         TEXT    NOT NULL,
    subtype      TEXT,
    ts           TEXT,
    is_sidechain INTEGER NOT NULL,
    agent_id     TEXT,
    model        TEXT,
    tool_names   TEXT,
    is_error     INTEGER NOT NULL,
    text         TEXT,
    PRIMARY KEY (file_id, generation, line_no, seq)
) WITHOUT ROWID;

CREATE TABLE diagnostics (
    id         INTEGER PRIMARY KEY,
    file_id    INTEGER NOT NULL REFERENCES files (id),
    generation INTEGER NOT NULL,
    line_no    INTEGER NOT NULL,
    byte_start INTEGER NOT NULL,
    byte_len   INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    detail     TEXT,
    created_at TEXT    NOT NULL,
    UNIQUE (file_id, generation, line_no, kind)
);

CREATE TABLE record_kinds (
    file_id    INTEGER NOT NULL REFERENCES files (id),
    generation INTEGER NOT NULL,
    category   TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (file_id, generation, category, name)
);
