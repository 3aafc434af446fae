-- A `summary` line's de-duplication key is its leaf uuid and text. Versions before this one built
-- it from the text before redaction, so a secret the text lost stayed in the key. Rebuild every
-- key from the stored (redacted) text; where two summaries differed only in a secret, the first
-- (lowest id) stays and the copies leave.
UPDATE summaries s
    SET dedup_key = COALESCE(s.leaf_uuid, '') || E'\n' || COALESCE(s.text, '')
    WHERE s.kind = 'summary'
      AND s.dedup_key <> COALESCE(s.leaf_uuid, '') || E'\n' || COALESCE(s.text, '')
      AND NOT EXISTS (
          SELECT 1 FROM summaries o
          WHERE o.kind = 'summary'
            AND o.dedup_key = COALESCE(s.leaf_uuid, '') || E'\n' || COALESCE(s.text, ''))
      AND s.id = (
          SELECT min(x.id) FROM summaries x
          WHERE x.kind = 'summary'
            AND COALESCE(x.leaf_uuid, '') || E'\n' || COALESCE(x.text, '')
              = COALESCE(s.leaf_uuid, '') || E'\n' || COALESCE(s.text, ''));

DELETE FROM summaries WHERE kind = 'summary'
    AND dedup_key <> COALESCE(leaf_uuid, '') || E'\n' || COALESCE(text, '');
