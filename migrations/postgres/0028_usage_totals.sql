-- The store's usage per UTC hour, model and cost kind, over every session: what a report with
-- no project, machine or user filter reads (days, weeks, months, models, blocks, totals, and
-- `gleaner status`'s today). A few rows per hour of use, where `usage_hours` has one per
-- session as well: on the 5 GB bench store 167 rows against 24,575, and no join. Kept in step with
-- usage_hours by the same write (store::usage). Filled here from usage_hours, anew, so the
-- migration can run again.
CREATE TABLE IF NOT EXISTS usage_totals (
    hour                     BIGINT  NOT NULL,
    model                    TEXT    NOT NULL,
    recorded                 BOOLEAN NOT NULL DEFAULT FALSE,
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
    PRIMARY KEY (hour, model, recorded)
);
DELETE FROM usage_totals;
INSERT INTO usage_totals
SELECT hour, model, recorded, SUM(messages), SUM(input_tokens), SUM(output_tokens),
    SUM(cache_creation_tokens), SUM(cache_creation_1h_tokens), SUM(cache_read_tokens),
    SUM(over_input), SUM(over_output), SUM(over_creation), SUM(over_creation_1h), SUM(over_read),
    SUM(recorded_cost)
FROM usage_hours
GROUP BY hour, model, recorded;
