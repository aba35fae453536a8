-- Where cost_usd came from: "upstream" (billed and reported by the
-- upstream), "catalog" (the catalog's prices), or "" (no cost known).
-- Plain ADD COLUMN: ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, and
-- schema_migrations makes sure this runs once.
ALTER TABLE requests ADD COLUMN cost_source String DEFAULT '';
