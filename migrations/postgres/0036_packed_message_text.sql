-- SQLite may store a message's text as a zstd frame (its migration 0036); PostgreSQL compresses
-- long values itself and keeps text. The schema versions of the two backends stay in step.
SELECT 1;
