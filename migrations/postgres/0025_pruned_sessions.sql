-- Sessions `gleaner prune` removed, and how: readers then say "pruned on <date>" instead of
-- "held no conversation", restore skips their files (an empty original is not written again),
-- and a later prune says when it takes the knowledge an earlier one kept on purpose.
CREATE TABLE IF NOT EXISTS pruned_sessions (
    session_id     TEXT    PRIMARY KEY,
    pruned_at      TEXT    NOT NULL,
    kept_knowledge BOOLEAN NOT NULL
);
