-- Every turn of an episode has its own label. `labels` lists the labels an episode's turns hold
-- (its own first, as a JSON array) so `--triage L` finds an episode holding a turn labelled L;
-- `turn_labels` holds each turn's label, confidence, line range and evidence. Episodes written
-- before hold their episode label only (they are relabelled when re-read).
ALTER TABLE episodes ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
ALTER TABLE episodes ADD COLUMN turn_labels TEXT NOT NULL DEFAULT '[]';
UPDATE episodes SET labels = '["' || triage || '"]';
