-- Compact message rows (issue 13), as on SQLite:
-- * No `session_id`: a message's session is its file's (`files.session_id`; extract names every
--   row of a file with the file's session).
-- * `uuid` and `parent_uuid` as 16-byte `bytea` (canonical lowercase UUIDs; any other id keeps
--   its own bytes: extract::rows::uuid_bytes) instead of 36 characters each.
-- * No `uuid_key`: it was never indexed (0002); a summary's leaf is found by the 16 bytes.
-- The type change rewrites the table, which also frees the dropped column's space.

ALTER TABLE messages DROP COLUMN session_id, DROP COLUMN uuid_key;
ALTER TABLE messages
    ALTER COLUMN uuid TYPE BYTEA USING (CASE
        WHEN uuid ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        THEN decode(replace(uuid, '-', ''), 'hex') ELSE convert_to(uuid, 'UTF8') END),
    ALTER COLUMN parent_uuid TYPE BYTEA USING (CASE
        WHEN parent_uuid ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        THEN decode(replace(parent_uuid, '-', ''), 'hex')
        ELSE convert_to(parent_uuid, 'UTF8') END);

-- The episode builder's state is stored compressed (extract::rows::pack_state); states written
-- before stay JSON, as bytes (unpack_state reads both).
ALTER TABLE files ALTER COLUMN episode_state TYPE BYTEA USING convert_to(episode_state, 'UTF8');
