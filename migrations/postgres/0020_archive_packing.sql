-- Packing the archive (issue 29): a live session's many small chunks, and a backfill's
-- fast-level ones, are recompressed as few large blocks at a high level against a dictionary of
-- their project (the first megabytes archived for it, raw: sessions of one project repeat one
-- another's files, prompts and tool output). A dictionary is archive data: never deleted while
-- a chunk names it.
CREATE TABLE IF NOT EXISTS archive_dicts (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project    TEXT   NOT NULL,
    raw_len    BIGINT NOT NULL,
    data       BYTEA  NOT NULL,
    created_at TEXT   NOT NULL
);
ALTER TABLE archive_dicts ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE INDEX IF NOT EXISTS archive_dicts_project ON archive_dicts (project, id);
-- The chunks packing has not reached yet (the packer walks only these).
CREATE INDEX IF NOT EXISTS archive_unpacked ON archive_chunks (file_id, generation) WHERE NOT packed;
