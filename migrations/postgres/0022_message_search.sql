-- Search (issue 30): a message's search vector moves out of `messages` into a narrow table of
-- its own. Why: a ranked search takes each kind's newest matches by walking the kind's table
-- newest first and checking each row's vector (`store::search::sql`), and in `messages` that
-- walk read every row, searchable or not (tool results, images and meta lines have no vector),
-- each as wide as its text: 19,152 rows for the newest 250 matches of "error" on the 1 GB
-- tree, 9 ms of a 20 ms query. This table holds only the searchable messages, keyed as
-- `messages` is, with the time the search filters on; 4,392 rows for the same walk, 2 ms.
-- No foreign key: its check would cost a lookup for every row written. A message's vector goes
-- with its row instead by a statement trigger (prune, re-extraction and the copy fold delete
-- messages; ingest never does, so it pays nothing).
-- Applying it again is harmless (a test does): each step checks what is already there.
CREATE TABLE IF NOT EXISTS message_search (
    file_id    BIGINT   NOT NULL,
    generation BIGINT   NOT NULL,
    line_no    BIGINT   NOT NULL,
    seq        BIGINT   NOT NULL,
    ts         TEXT,
    search_vec tsvector NOT NULL,
    PRIMARY KEY (file_id, generation, line_no, seq)
);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'messages'
                 AND column_name = 'search_vec') THEN
        INSERT INTO message_search (file_id, generation, line_no, seq, ts, search_vec)
        SELECT file_id, generation, line_no, seq, ts, search_vec FROM messages
        WHERE search_vec IS NOT NULL
        ON CONFLICT DO NOTHING;
        DROP INDEX IF EXISTS messages_search;
        ALTER TABLE messages DROP COLUMN search_vec;
    END IF;
END $$;
CREATE INDEX IF NOT EXISTS message_search_vec ON message_search USING GIN (search_vec);

CREATE OR REPLACE FUNCTION message_search_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_search s USING gone g
    WHERE s.file_id = g.file_id AND s.generation = g.generation AND s.line_no = g.line_no
      AND s.seq = g.seq;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS messages_search_gone ON messages;
CREATE TRIGGER messages_search_gone AFTER DELETE ON messages
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION message_search_gone();
