-- A `summary` line's de-duplication key is its leaf uuid and text. Versions before this one built
-- it from the text before redaction, so a secret the text lost stayed in the key. Rebuild every
-- key from the stored (redacted) text; where two summaries differed only in a secret, the first
-- stays and the copy leaves (with its index entry).
UPDATE OR IGNORE summaries
    SET dedup_key = COALESCE(leaf_uuid, '') || char(10) || COALESCE(text, '')
    WHERE kind = 'summary'
      AND dedup_key <> COALESCE(leaf_uuid, '') || char(10) || COALESCE(text, '');

INSERT INTO search_fts (search_fts, rowid, body)
    SELECT 'delete', d.id, s.text
    FROM summaries s JOIN search_docs d ON d.kind = 'summary' AND d.ref_id = s.id
    WHERE s.kind = 'summary' AND s.text IS NOT NULL
      AND s.dedup_key <> COALESCE(s.leaf_uuid, '') || char(10) || COALESCE(s.text, '');
DELETE FROM search_docs WHERE kind = 'summary' AND ref_id IN (
    SELECT id FROM summaries WHERE kind = 'summary'
      AND dedup_key <> COALESCE(leaf_uuid, '') || char(10) || COALESCE(text, ''));
DELETE FROM summaries WHERE kind = 'summary'
    AND dedup_key <> COALESCE(leaf_uuid, '') || char(10) || COALESCE(text, '');
