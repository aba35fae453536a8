-- Where the upstream that served processes: a direct upstream's declared
-- region, or the geography of the inference profile its model id names.
-- Rows written before it read ''.
-- migrate checks system.columns first: 18.16 has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE requests ADD COLUMN served_region String DEFAULT '';
