-- A realtime session's row: how many responses it had, the WebSocket close
-- code that ended it and who closed it. Rows written before them read 0
-- or ''.
-- migrate checks system.columns first: 18.16 has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE requests ADD COLUMN responses Int32 DEFAULT 0;
ALTER TABLE requests ADD COLUMN close_code Int32 DEFAULT 0;
ALTER TABLE requests ADD COLUMN closed_by String DEFAULT '';
