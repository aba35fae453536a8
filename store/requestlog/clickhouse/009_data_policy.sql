-- data_policy names the data restrictions that bound a request (zero
-- retention, no training, quantizations, a price ceiling) and
-- data_policy_via how each was held on the upstream it went to.
ALTER TABLE requests ADD COLUMN data_policy String DEFAULT '';
ALTER TABLE requests ADD COLUMN data_policy_via String DEFAULT '';
