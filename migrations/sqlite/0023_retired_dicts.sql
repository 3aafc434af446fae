-- A dictionary is made of its project's first archived bytes; once `prune` removes sessions of
-- the project, those bytes may be in it. It is then retired: no longer used to pack, its chunks
-- are compressed again without it, and it is emptied when no chunk names it (`store::retire`).
-- A table of its own rather than a column: created if missing, so applying it again is harmless.
CREATE TABLE IF NOT EXISTS archive_dicts_retired (
    dict_id INTEGER PRIMARY KEY
);
-- The chunks packed against a dictionary, found when it is retired (live chunks name none).
CREATE INDEX IF NOT EXISTS archive_chunks_dict ON archive_chunks (dict_id) WHERE dict_id IS NOT NULL;
