-- Who and where: each copy of a transcript (a `files` row: machine and path) records the user
-- of the machine that holds it (config `user`); a session records the user of the machine that
-- first wrote it, beside `sessions.machine`. Rows written before this migration have no user
-- (empty on files, NULL on sessions). `files_session_machine` answers "sessions held by
-- machine M" for one session at a time (the `--machine` filter of every listing).
ALTER TABLE files ADD COLUMN user_name TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN user_name TEXT;
CREATE INDEX IF NOT EXISTS files_session_machine ON files (session_id, machine, user_name);
