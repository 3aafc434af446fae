-- `gleaner snippets` lists snippets newest first under any mix of filters, and counts all
-- matches. This index holds that order and every column the filters read except the text
-- (session, type, project; the id for tags and keyword), so a page walks it backwards and
-- reads only the rows it returns, and a count is an index-only scan instead of a pass over
-- the snippet texts. It supersedes snippets_created (its first two columns).
CREATE INDEX snippets_listing ON snippets (created_at, id, session_id, snippet_type, project);
DROP INDEX snippets_created;
