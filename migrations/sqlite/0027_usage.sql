-- Usage and cost that outlive the transcripts (issue 47).
--
-- usage_messages replaces assistant_usage: one row per API message, now saying when (its
-- line's timestamp), with which model, what the transcript recorded as its cost, and whether a
-- sub-agent wrote it (what decides which of a message's lines counts, as ccusage decides).
-- Rows copied from assistant_usage have no timestamp and are in no report until their file is
-- read again (`reextract`). Written to run again on a store that has it (the tests replay the
-- newest migration): the old table is made (empty) if it is gone, copied, and dropped.
CREATE TABLE IF NOT EXISTS usage_messages (
    message_id                  TEXT    PRIMARY KEY,
    session_id                  TEXT    NOT NULL,
    input_tokens                INTEGER  NOT NULL,
    output_tokens               INTEGER  NOT NULL,
    cache_creation_input_tokens INTEGER  NOT NULL,
    cache_read_input_tokens     INTEGER  NOT NULL,
    cache_creation_1h_tokens    INTEGER  NOT NULL DEFAULT 0,
    model                       TEXT,
    ts_ms                       INTEGER,
    cost_usd                    REAL,
    sidechain                   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS usage_messages_session ON usage_messages (session_id);
-- The rows without a timestamp, found without a scan: `gleaner usage` says they exist.
CREATE INDEX IF NOT EXISTS usage_messages_undated ON usage_messages (message_id)
    WHERE ts_ms IS NULL;

CREATE TABLE IF NOT EXISTS assistant_usage (
    message_id                  TEXT    PRIMARY KEY,
    session_id                  TEXT    NOT NULL,
    input_tokens                INTEGER  NOT NULL,
    output_tokens               INTEGER  NOT NULL,
    cache_creation_input_tokens INTEGER  NOT NULL,
    cache_read_input_tokens     INTEGER  NOT NULL
);
INSERT OR IGNORE INTO usage_messages (message_id, session_id, input_tokens, output_tokens,
    cache_creation_input_tokens, cache_read_input_tokens)
SELECT message_id, session_id, input_tokens, output_tokens, cache_creation_input_tokens,
    cache_read_input_tokens
FROM assistant_usage;
DROP TABLE assistant_usage;

-- What the reports read, kept in step with usage_messages by each write transaction
-- (store::usage): per session, UTC hour (ts_ms / 3,600,000), model ('' for none) and whether
-- the cost was recorded in the transcript. over_* are the tokens of each message past 200,000
-- in a bucket (long-context rates); recorded_cost sums costUSD. An hour grain serves any
-- whole-hour time zone's days exactly, and the 5-hour blocks.
CREATE TABLE IF NOT EXISTS usage_hours (
    session_id               TEXT    NOT NULL,
    hour                     INTEGER  NOT NULL,
    model                    TEXT    NOT NULL,
    recorded                 INTEGER NOT NULL DEFAULT 0,
    messages                 INTEGER  NOT NULL,
    input_tokens             INTEGER  NOT NULL,
    output_tokens            INTEGER  NOT NULL,
    cache_creation_tokens    INTEGER  NOT NULL,
    cache_creation_1h_tokens INTEGER  NOT NULL,
    cache_read_tokens        INTEGER  NOT NULL,
    over_input               INTEGER  NOT NULL,
    over_output              INTEGER  NOT NULL,
    over_creation            INTEGER  NOT NULL,
    over_creation_1h         INTEGER  NOT NULL,
    over_read                INTEGER  NOT NULL,
    recorded_cost            REAL NOT NULL,
    PRIMARY KEY (session_id, hour, model, recorded)
);
CREATE INDEX IF NOT EXISTS usage_hours_hour ON usage_hours (hour);

-- The facts of each session the reports group and filter by, copied when its usage is
-- written: they survive `prune`, which deletes the sessions row.
CREATE TABLE IF NOT EXISTS usage_sessions (
    session_id TEXT PRIMARY KEY,
    project    TEXT NOT NULL,
    cwd        TEXT,
    machine    TEXT NOT NULL,
    user_name  TEXT NOT NULL
);
