-- The usage's details: cached_tokens, the part of prompt_tokens the
-- upstream read from its prompt cache, and reasoning_tokens, the part of
-- completion_tokens it spent on reasoning, each as the upstream reported it
-- (0 when it did not). Rows written before them read 0. migrate checks
-- system.columns first: 18.16 has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE requests ADD COLUMN cached_tokens Int64 DEFAULT 0;
ALTER TABLE requests ADD COLUMN reasoning_tokens Int64 DEFAULT 0;
