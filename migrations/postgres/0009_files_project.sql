-- The files of a project: a new summary's leaf is looked up among them (store::knowledge).
CREATE INDEX IF NOT EXISTS files_project ON files (project);
