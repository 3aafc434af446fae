-- A message's text may be stored as a zstd frame (issue 48, store::packed_text). Nothing in the
-- schema changes: the search index's content view passes the stored value to gleaner_fts(),
-- which reads a frame as its text, and every other read goes through gleaner_text(). The
-- version marks the stored format: a build older than this refuses to write here (`migrate`),
-- and its readers warn, since they could not read a frame. Restating the view instead made a new
-- database's migrations need more room than the 4.5 MB disk of tests/it/outage.rs.
SELECT 1;
