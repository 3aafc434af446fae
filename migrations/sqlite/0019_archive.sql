-- The archive (issue 29): every byte read from a transcript, zstd-compressed, committed in the
-- same transaction as the rows made from it and the file's checkpoint.
--
-- One row per stretch of a file: `[start_off, end_off)` of generation `generation`, one zstd
-- frame (`codec` 1) of exactly `end_off - start_off` bytes, optionally compressed against a
-- stored dictionary (`dict_id`; none yet). A live session adds one small chunk per batch; packing
-- later replaces a run of chunks with one block covering the same bytes (`packed` 1). A chunk
-- with `partial` 1 is a last line without its newline, archived once the file went idle: it
-- starts at the checkpoint and is replaced when that line is completed.
--
-- A rowid table with a unique key, not WITHOUT ROWID: its rows are large blobs (see 0008).
CREATE TABLE IF NOT EXISTS archive_chunks (
    file_id    INTEGER NOT NULL REFERENCES files (id),
    generation INTEGER NOT NULL,
    start_off  INTEGER NOT NULL,
    end_off    INTEGER NOT NULL,
    codec      INTEGER NOT NULL DEFAULT 1,
    dict_id    INTEGER,
    packed     INTEGER NOT NULL DEFAULT 0,
    partial    INTEGER NOT NULL DEFAULT 0,
    data       BLOB    NOT NULL,
    UNIQUE (file_id, generation, start_off)
);

-- Files that sit beside a transcript (a sub-agent's `agent-<id>.meta.json`), whole, compressed
-- the same way; `name` is the file name in the transcript's folder.
CREATE TABLE IF NOT EXISTS archive_sidecars (
    file_id INTEGER NOT NULL REFERENCES files (id),
    name    TEXT    NOT NULL,
    codec   INTEGER NOT NULL DEFAULT 1,
    data    BLOB    NOT NULL,
    PRIMARY KEY (file_id, name)
);
