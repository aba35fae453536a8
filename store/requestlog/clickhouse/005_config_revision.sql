-- The revision of the configuration that served the request, so a reviewer
-- can tie a row to the change that caused it. migrate checks system.columns
-- first: 18.16 has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE requests ADD COLUMN config_revision String DEFAULT '';
