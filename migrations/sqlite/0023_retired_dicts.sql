-- A dictionary is made of its project's first archived bytes; once `prune` removes sessions of
-- the project, those bytes may be in it. It is then retired: no longer used to pack, its chunks
-- are compressed again without it, and it is deleted when no chunk names it (`run::pack`).
ALTER TABLE archive_dicts ADD COLUMN retired INTEGER NOT NULL DEFAULT 0;
