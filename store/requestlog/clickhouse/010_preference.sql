-- The provider preference a request was sent with (ranking, preferred
-- order, allow and deny lists, as merged), the verdict on whether the
-- served provider honoured it, the refusal's message beside its code, what
-- the upstream reported of its failed attempts, and the request's own
-- routing object (for a replay). Rows written before them read '' or [].
-- migrate checks system.columns first: 18.16 has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE requests ADD COLUMN preference_rank_by String DEFAULT '';
ALTER TABLE requests ADD COLUMN preference_preferred Array(String);
ALTER TABLE requests ADD COLUMN preference_allowed Array(String);
ALTER TABLE requests ADD COLUMN preference_denied Array(String);
ALTER TABLE requests ADD COLUMN preference_verdict String DEFAULT '';
ALTER TABLE requests ADD COLUMN refused_message String DEFAULT '';
ALTER TABLE requests ADD COLUMN upstream_attempts String DEFAULT '';
ALTER TABLE requests ADD COLUMN routing_object String DEFAULT '';
