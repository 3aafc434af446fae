-- The byte offset at which a file's open episode was last written closed by the batch that
-- caught the file up while it was idle past the session timeout (episode::Last::Closed). The
-- idle sweep skips the files whose closed episode stands at their present offset instead of
-- decoding their builder states again (a backfill's thousands of old files). NULL: not closed
-- at the present offset; every checkpoint write sets it.
ALTER TABLE files ADD COLUMN episode_closed_offset BIGINT;
