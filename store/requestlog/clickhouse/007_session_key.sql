-- Which request header named the session (session_key: X-Session-Id,
-- x-claude-code-session-id, session-id, as [sessions] headers lists them)
-- and how the session was kept on one model and provider (session_affinity:
-- pin, pin+session_id, pin+prompt_cache_key), so a reviewer reads one
-- session's turns together. Rows written before them read ''. migrate
-- checks system.columns first: 18.16 has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE requests ADD COLUMN session_key String DEFAULT '';
ALTER TABLE requests ADD COLUMN session_affinity String DEFAULT '';
