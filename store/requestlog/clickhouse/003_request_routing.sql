-- Whether the request carried its own routing object (the request rung):
-- `sluice diff --traffic` says how many of the requests it weighs did.
-- 18.16 has no ADD COLUMN IF NOT EXISTS: migrate checks system.columns first.
ALTER TABLE requests ADD COLUMN request_routing UInt8 DEFAULT 0;
