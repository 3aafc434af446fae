-- SQLite's search documents of summaries, feedback and snippets are written by the code that
-- inserts those rows (its migration 0035); PostgreSQL's rows carry their vectors already. The
-- schema versions of the two backends stay in step.
SELECT 1;
