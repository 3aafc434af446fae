-- Chinese and Japanese search (SQLite's migration 0026 says how): on PostgreSQL the search
-- words are Gleaner's own lexemes (`extract::lexemes`), each CJK character one of them, so
-- nothing changes in the schema; texts indexed by an earlier build are indexed again as their
-- sessions are derived again (rules version 4). This file keeps the two migration lists in step.
SELECT 1;
