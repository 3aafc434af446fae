-- Compact message rows (issue 13: the messages table was two thirds of the database, about
-- 420 bytes of keys and metadata a row):
--
-- * A rowid table with a unique index on the natural key, instead of WITHOUT ROWID. A WITHOUT
--   ROWID table is an index B-tree: a row longer than about 1 KB (a quarter of the page) spills
--   into overflow pages that are mostly empty, and interior pages copy whole rows. Measured on
--   the 1 GB bench tree: 36 MB of overflow and 22 MB unused in a 96 MB table. A table B-tree
--   keeps rows up to ~4 KB on the page; the key index is four small integers a row.
-- * No `session_id`: a message's session is its file's (`files.session_id`; extract names every
--   row of a file with the file's session), 36 bytes a row.
-- * `uuid` and `parent_uuid` as 16-byte BLOBs (canonical lowercase UUIDs; any other id keeps its
--   own bytes: extract::rows::uuid_bytes), 40 bytes a row fewer.
-- * No `uuid_key`: its index was never made (0002), so finding a summary's leaf scans the
--   project's messages either way, and compares the 16 bytes directly.
-- * `text` last: reading the small columns never walks a long text.
--
-- The table is rebuilt; the search view that reads it is dropped and made again unchanged.

DROP VIEW search_content;

CREATE TABLE messages_v8 (
    id           INTEGER PRIMARY KEY,
    file_id      INTEGER NOT NULL REFERENCES files (id),
    generation   INTEGER NOT NULL,
    line_no      INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    byte_start   INTEGER NOT NULL,
    byte_end     INTEGER NOT NULL,
    uuid         BLOB,
    parent_uuid  BLOB,
    kind         TEXT    NOT NULL,
    subtype      TEXT,
    ts           TEXT,
    is_sidechain INTEGER NOT NULL,
    agent_id     TEXT,
    model        TEXT,
    tool_names   TEXT,
    is_error     INTEGER NOT NULL,
    is_meta      INTEGER NOT NULL DEFAULT 0,
    text         TEXT
);

INSERT INTO messages_v8 (file_id, generation, line_no, seq, byte_start, byte_end, uuid,
    parent_uuid, kind, subtype, ts, is_sidechain, agent_id, model, tool_names,
    is_error, is_meta, text)
SELECT file_id, generation, line_no, seq, byte_start, byte_end,
    CASE WHEN length(uuid) = 36 AND uuid = lower(uuid) AND substr(uuid, 9, 1) = '-'
        AND substr(uuid, 14, 1) = '-' AND substr(uuid, 19, 1) = '-'
        AND substr(uuid, 24, 1) = '-' AND length(unhex(uuid, '-')) = 16
        THEN unhex(uuid, '-') ELSE CAST(uuid AS BLOB) END,
    CASE WHEN length(parent_uuid) = 36 AND parent_uuid = lower(parent_uuid)
        AND substr(parent_uuid, 9, 1) = '-' AND substr(parent_uuid, 14, 1) = '-'
        AND substr(parent_uuid, 19, 1) = '-' AND substr(parent_uuid, 24, 1) = '-'
        AND length(unhex(parent_uuid, '-')) = 16
        THEN unhex(parent_uuid, '-') ELSE CAST(parent_uuid AS BLOB) END,
    kind, subtype, ts, is_sidechain, agent_id, model, tool_names, is_error, is_meta,
    text
FROM messages ORDER BY file_id, generation, line_no, seq;

DROP TABLE messages;
ALTER TABLE messages_v8 RENAME TO messages;
CREATE UNIQUE INDEX messages_key ON messages (file_id, generation, line_no, seq);

CREATE VIEW search_content (id, body) AS
SELECT d.id, CASE d.kind
    WHEN 'message' THEN (SELECT m.text FROM messages m WHERE m.file_id = d.file_id
        AND m.generation = d.generation AND m.line_no = d.line_no AND m.seq = d.seq)
    WHEN 'summary' THEN (SELECT s.text FROM summaries s WHERE s.id = d.ref_id)
    WHEN 'feedback' THEN (SELECT f.content || COALESCE(char(10) || f.reason, '')
        FROM feedback f WHERE f.id = d.ref_id)
    WHEN 'snippet' THEN (SELECT sn.title || char(10) || sn.content
        FROM snippets sn WHERE sn.id = d.ref_id)
    END
FROM search_docs d;

-- A message's search document names no session either (the empty text: the column is NOT
-- NULL); search takes the file's (store::search::sql::SQLITE_DOC_SESSION).
UPDATE search_docs SET session_id = '' WHERE kind = 'message';

-- The episode builder's state is stored compressed (extract::rows::pack_state), as a BLOB;
-- states written before stay JSON, now as bytes too (unpack_state reads both).
UPDATE files SET episode_state = CAST(episode_state AS BLOB) WHERE episode_state IS NOT NULL;
