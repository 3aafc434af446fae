-- The archive (issue 29): every byte read from a transcript, zstd-compressed, committed in the
-- same transaction as the rows made from it and the file's checkpoint.
--
-- One row per stretch of a file: `[start_off, end_off)` of generation `generation`, one zstd
-- frame (`codec` 1) of exactly `end_off - start_off` bytes, optionally compressed against a
-- stored dictionary (`dict_id`; none yet). A live session adds one small chunk per batch; packing
-- later replaces a run of chunks with one block covering the same bytes (`packed` true). A chunk
-- with `partial` true is a last line without its newline, archived once the file went idle: it
-- starts at the checkpoint and is replaced when that line is completed.
CREATE TABLE IF NOT EXISTS archive_chunks (
    file_id    BIGINT   NOT NULL REFERENCES files (id),
    generation BIGINT   NOT NULL,
    start_off  BIGINT   NOT NULL,
    end_off    BIGINT   NOT NULL,
    codec      BIGINT   NOT NULL DEFAULT 1,
    dict_id    BIGINT,
    packed     BOOLEAN  NOT NULL DEFAULT FALSE,
    partial    BOOLEAN  NOT NULL DEFAULT FALSE,
    data       BYTEA    NOT NULL,
    PRIMARY KEY (file_id, generation, start_off)
);
-- Already compressed: the server must not try pglz on it again.
ALTER TABLE archive_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Files that sit beside a transcript (a sub-agent's `agent-<id>.meta.json`), whole, compressed
-- the same way; `name` is the file name in the transcript's folder.
CREATE TABLE IF NOT EXISTS archive_sidecars (
    file_id BIGINT   NOT NULL REFERENCES files (id),
    name    TEXT     NOT NULL,
    codec   BIGINT   NOT NULL DEFAULT 1,
    data    BYTEA    NOT NULL,
    PRIMARY KEY (file_id, name)
);
ALTER TABLE archive_sidecars ALTER COLUMN data SET STORAGE EXTERNAL;
