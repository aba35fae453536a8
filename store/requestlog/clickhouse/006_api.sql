-- The API a request came in on: chat (POST /v1/chat/completions), messages
-- (POST /v1/messages) or embeddings (POST /v1/embeddings), so a reviewer can
-- tell an Anthropic client's rows from the others. Rows written before it
-- read ''. migrate checks system.columns first: 18.16 has no ADD COLUMN IF
-- NOT EXISTS.
ALTER TABLE requests ADD COLUMN api String DEFAULT '';
