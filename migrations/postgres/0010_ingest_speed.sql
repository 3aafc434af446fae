-- Cheaper bulk ingest on PostgreSQL (issue 13).
--
-- * No foreign keys from the ingested rows to `files`. Every row of these tables is written by
--   the single writer in the transaction that advances its file's checkpoint (the guarded
--   UPDATE of that very `files` row), and files are never deleted (a vanished file is marked
--   `gone`, its rows kept), so the key could never fail; checking it cost a lookup and a
--   KEY SHARE row lock per inserted row: 22% of the server's CPU in a backfill of the 1 GB bench
--   tree. SQLite never enforced them (`foreign_keys` is off there), so both backends now hold
--   the same rule. The snippet and refinement keys (few rows, cascades) stay.
-- * `files.episode_state` is zlib-compressed by Gleaner already (extract::rows::pack_state):
--   EXTERNAL storage stops the server trying pglz on it again (its top symbol in a profile).

ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_file_id_fkey;
ALTER TABLE diagnostics DROP CONSTRAINT IF EXISTS diagnostics_file_id_fkey;
ALTER TABLE record_kinds DROP CONSTRAINT IF EXISTS record_kinds_file_id_fkey;
ALTER TABLE summaries DROP CONSTRAINT IF EXISTS summaries_file_id_fkey;
ALTER TABLE feedback DROP CONSTRAINT IF EXISTS feedback_file_id_fkey;
ALTER TABLE tool_uses DROP CONSTRAINT IF EXISTS tool_uses_file_id_fkey;
ALTER TABLE episodes DROP CONSTRAINT IF EXISTS episodes_file_id_fkey;

ALTER TABLE files ALTER COLUMN episode_state SET STORAGE EXTERNAL;

-- * Long values (message text over ~2 KB, their search vectors, episode evidence, snippets)
--   are compressed with lz4 instead of pglz: pglz was the server's top symbol in a backfill
--   profile (7% of its CPU), lz4 does the same work several times faster for a few percent more
--   disk. Servers built without lz4 (or older than 14) keep pglz: the block only notes it.
DO $$
BEGIN
    ALTER TABLE messages ALTER COLUMN text SET COMPRESSION lz4,
        ALTER COLUMN search_vec SET COMPRESSION lz4;
    ALTER TABLE episodes ALTER COLUMN evidence SET COMPRESSION lz4,
        ALTER COLUMN turn_labels SET COMPRESSION lz4;
    ALTER TABLE snippets ALTER COLUMN content SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'lz4 compression not available (%); keeping pglz', SQLERRM;
END
$$;
