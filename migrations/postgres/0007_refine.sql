-- Optional refinement by a user-chosen command (`[refine] command`): snippets it writes have
-- origin 'refined', and each episode it handled is recorded once in `refinements`.
ALTER TABLE snippets DROP CONSTRAINT IF EXISTS snippets_origin_check;
ALTER TABLE snippets ADD CONSTRAINT snippets_origin_check
    CHECK (origin IN ('auto', 'manual', 'refined'));

CREATE TABLE refinements (
    episode_id  BIGINT  PRIMARY KEY REFERENCES episodes (id),
    state       TEXT    NOT NULL CHECK (state IN ('done', 'failed')),
    attempts    BIGINT  NOT NULL,
    learnings   INTEGER NOT NULL DEFAULT 0,
    error       TEXT,
    updated_at  TEXT    NOT NULL
);
