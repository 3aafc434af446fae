-- Usage per session, project, machine and user, each with its last hour of use: what
-- `gleaner usage --by session|project|machine|user` reads when no date, project, machine or
-- user narrows it. Before this, those reports grouped `usage_hours` joined to
-- `usage_sessions` at every call (one row per session and hour: 24,575 rows and 60-140 ms on
-- the 5 GB bench store), a cost that grew with the store. Now a page reads its keys in recency
-- order from an index and their sums by primary key. Kept in step with usage_hours by the same
-- write (store::usage); a session counts under the project, machine and user it had when its
-- usage was written. Filled here from usage_hours, anew, so the migration can run again.
CREATE TABLE IF NOT EXISTS usage_groups (
    kind                     TEXT    NOT NULL,
    key                      TEXT    NOT NULL,
    model                    TEXT    NOT NULL,
    recorded                 BOOLEAN NOT NULL DEFAULT FALSE,
    last_hour                BIGINT  NOT NULL,
    messages                 BIGINT  NOT NULL,
    input_tokens             BIGINT  NOT NULL,
    output_tokens            BIGINT  NOT NULL,
    cache_creation_tokens    BIGINT  NOT NULL,
    cache_creation_1h_tokens BIGINT  NOT NULL,
    cache_read_tokens        BIGINT  NOT NULL,
    over_input               BIGINT  NOT NULL,
    over_output              BIGINT  NOT NULL,
    over_creation            BIGINT  NOT NULL,
    over_creation_1h         BIGINT  NOT NULL,
    over_read                BIGINT  NOT NULL,
    recorded_cost            DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (kind, key, model, recorded)
);
-- One row per key, for paging a report by recency without grouping.
CREATE TABLE IF NOT EXISTS usage_group_keys (
    kind      TEXT   NOT NULL,
    key       TEXT   NOT NULL,
    last_hour BIGINT NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE INDEX IF NOT EXISTS usage_group_keys_recent
    ON usage_group_keys (kind, last_hour DESC, key);

DELETE FROM usage_groups;
DELETE FROM usage_group_keys;
INSERT INTO usage_groups
SELECT kind, key, model, recorded, MAX(hour), SUM(messages), SUM(input_tokens),
    SUM(output_tokens), SUM(cache_creation_tokens), SUM(cache_creation_1h_tokens),
    SUM(cache_read_tokens), SUM(over_input), SUM(over_output), SUM(over_creation),
    SUM(over_creation_1h), SUM(over_read), SUM(recorded_cost)
FROM (
    SELECT k.kind AS kind,
        CASE k.kind
            WHEN 'session' THEN h.session_id
            WHEN 'project' THEN COALESCE(s.project, '')
            WHEN 'machine' THEN COALESCE(s.machine, '')
            ELSE COALESCE(s.user_name, '')
        END AS key,
        h.*
    FROM usage_hours h
    LEFT JOIN usage_sessions s ON s.session_id = h.session_id
    CROSS JOIN (SELECT 'session' AS kind UNION ALL SELECT 'project' UNION ALL SELECT 'machine'
                UNION ALL SELECT 'user') k
    WHERE h.messages > 0
) x
GROUP BY kind, key, model, recorded;
INSERT INTO usage_group_keys
SELECT kind, key, MAX(last_hour) FROM usage_groups GROUP BY kind, key;
