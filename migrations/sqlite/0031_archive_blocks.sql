-- Packing by project blocks (issue 48). A block is the bytes of several finished files of one
-- project, end to end, as one zstd frame (level 9, a window of the whole block): sessions of a
-- project repeat one another, and a window across them is what buys size. A chunk packed into a
-- block keeps its row (its file, generation and byte range) with no data of its own: `block_id`
-- names the block and `block_off` where its bytes start there. So a file's chunks still tile
-- what was read, and every reader walks them as before. The two columns are 0030's (a column
-- cannot be added "if missing" on SQLite); everything here can be applied again.
--
-- AUTOINCREMENT: a block is deleted once no chunk names it (after a prune, `run::pack::retire_blocks`), and
-- SQLite would otherwise give its id to the next block while a restore may still hold the old one.
CREATE TABLE IF NOT EXISTS archive_blocks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    project    TEXT    NOT NULL,
    codec      INTEGER NOT NULL DEFAULT 1,
    raw_len    INTEGER NOT NULL,
    -- A prune took some of its bytes' sessions: its other chunks get frames of their own again
    -- and it is deleted (`run::pack::retire_blocks`).
    retired    INTEGER NOT NULL DEFAULT 0,
    data       BLOB    NOT NULL,
    created_at TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS archive_blocks_retired ON archive_blocks (id) WHERE retired;
CREATE INDEX IF NOT EXISTS archive_chunks_block ON archive_chunks (block_id) WHERE block_id IS NOT NULL;
-- What the former packing made (a file alone at level 16, against its project's dictionary or
-- none) is taken again into blocks: dictionaries are retired (their chunks get frames of their
-- own, then are packed), chunks packed alone are packing's to take again.
INSERT INTO archive_dicts_retired (dict_id) SELECT id FROM archive_dicts WHERE raw_len > 0
    ON CONFLICT (dict_id) DO NOTHING;
UPDATE archive_chunks SET packed = 0 WHERE packed AND dict_id IS NULL AND block_id IS NULL;
