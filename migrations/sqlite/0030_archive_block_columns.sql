-- The columns of a chunk packed into a project block (issue 48, `archive_blocks`, 0031): the
-- block that holds its bytes, and where they start there. On their own so that 0031 can be
-- applied again harmlessly (SQLite cannot add a column only if it is missing).
ALTER TABLE archive_chunks ADD COLUMN block_id INTEGER;
ALTER TABLE archive_chunks ADD COLUMN block_off INTEGER;
