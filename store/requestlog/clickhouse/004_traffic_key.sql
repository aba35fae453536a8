-- Traffic (sluice diff --traffic) counts requests per combination (key_id,
-- team, decided_model, upstream, route). Grouping 10M rows by five strings
-- is slow on 18.16, so each row carries a 64-bit hash of its combination,
-- computed by the server at insert (rows written before this migration get
-- it computed when read), and traffic_keys maps each hash back to its
-- strings. The ORDER BY keeps two combinations that share a hash as two
-- rows, so the store can see a collision and count by the strings instead.
-- The expression must stay the same in the column and the view.
ALTER TABLE requests ADD COLUMN traffic_key UInt64 DEFAULT cityHash64(key_id, team, decided_model, upstream, route);

CREATE TABLE IF NOT EXISTS traffic_keys (
    traffic_key UInt64,
    key_id String,
    team String,
    decided_model String,
    upstream String,
    route String
) ENGINE = ReplacingMergeTree()
ORDER BY (traffic_key, key_id, team, decided_model, upstream, route);

-- Every insert into requests, by any writer, records its combinations.
CREATE MATERIALIZED VIEW IF NOT EXISTS traffic_keys_mv TO traffic_keys AS
SELECT cityHash64(key_id, team, decided_model, upstream, route) AS traffic_key, key_id, team, decided_model, upstream, route
FROM requests
GROUP BY key_id, team, decided_model, upstream, route;

-- The combinations of the rows written before the view existed. Running it
-- again only adds rows that the table's merges and the reader's DISTINCT fold.
INSERT INTO traffic_keys
SELECT cityHash64(key_id, team, decided_model, upstream, route), key_id, team, decided_model, upstream, route
FROM requests
GROUP BY key_id, team, decided_model, upstream, route;
