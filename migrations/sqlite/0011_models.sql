-- Model names in a lookup table (issue 13): a message row keeps `model_id` instead of the name,
-- which repeated ~23 bytes on every assistant row (3 MB of a 103 MB database for the 1 GB bench
-- tree). Gleaner resolves the ids inside each write transaction (store::model_names).
--
-- The table is rebuilt, as in 0008, so `text` stays the last column; the search view that reads
-- it is dropped and made again unchanged. (0010 exists on PostgreSQL only.)
CREATE TABLE models (
    id   INTEGER PRIMARY KEY,
    name TEXT    NOT NULL UNIQUE
);
INSERT INTO models (name)
SELECT DISTINCT model FROM messages WHERE model IS NOT NULL ORDER BY model;

DROP VIEW search_content;
CREATE TABLE messages_v11 (
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
    model_id     INTEGER REFERENCES models (id),
    tool_names   TEXT,
    is_error     INTEGER NOT NULL,
    is_meta      INTEGER NOT NULL DEFAULT 0,
    text         TEXT
);
INSERT INTO messages_v11 (id, file_id, generation, line_no, seq, byte_start, byte_end, uuid,
    parent_uuid, kind, subtype, ts, is_sidechain, agent_id, model_id, tool_names, is_error,
    is_meta, text)
SELECT m.id, m.file_id, m.generation, m.line_no, m.seq, m.byte_start, m.byte_end, m.uuid,
    m.parent_uuid, m.kind, m.subtype, m.ts, m.is_sidechain, m.agent_id, mo.id, m.tool_names,
    m.is_error, m.is_meta, m.text
FROM messages m LEFT JOIN models mo ON mo.name = m.model
ORDER BY m.id;
DROP TABLE messages;
ALTER TABLE messages_v11 RENAME TO messages;
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

-- A message's search document keeps no time either: search reads its row's
-- (store::search::sql::SQLITE_DOC_TS), 24 bytes fewer on each.
UPDATE search_docs SET ts = NULL WHERE kind = 'message';
