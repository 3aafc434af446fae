-- Session references by id prefix (`abc123` for `abc123…`): a range over this index in byte
-- order. The primary key's index follows the database's collation, which takes no range for
-- a prefix unless that collation is `C`.
CREATE INDEX IF NOT EXISTS sessions_id_c ON sessions (session_id COLLATE "C");
