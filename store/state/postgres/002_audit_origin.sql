-- Where each audit entry came from: the client's address and the request's
-- id. Entries written before read as ''.
ALTER TABLE audit ADD COLUMN IF NOT EXISTS client TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN IF NOT EXISTS request_id TEXT NOT NULL DEFAULT '';
