-- The state store on PostgreSQL: routes, their audit trail, and flags.
-- Documents are json (not jsonb): stored and returned as written.
CREATE TABLE IF NOT EXISTS routes (
  id TEXT PRIMARY KEY,
  position INTEGER NOT NULL,
  doc JSON NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
  id BIGSERIAL PRIMARY KEY,
  ts TIMESTAMPTZ NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  route_id TEXT NOT NULL,
  before_doc JSON,
  after_doc JSON
);
CREATE TABLE IF NOT EXISTS meta (
  k TEXT PRIMARY KEY,
  v TEXT NOT NULL
);
