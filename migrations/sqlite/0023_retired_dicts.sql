-- A dictionary is made of its project's first archived bytes; once `prune` removes sessions of
-- the project, those bytes may be in it. It is then retired: no longer used to pack, its chunks
-- are compressed again without it, and it is deleted when no chunk names it (`store::retire`).
-- A table of its own rather than a column: created if missing, so applying it again is harmless.
CREATE TABLE IF NOT EXISTS archive_dicts_retired (
    dict_id INTEGER PRIMARY KEY
);
