-- One row per gateway request. ts (seconds) drives partitioning; ts_ms keeps
-- the millisecond timestamp (DateTime64 does not exist on ClickHouse 18.16).
-- ReplacingMergeTree is a second line of defence against duplicate
-- request_ids; the store itself skips ids that are already present.
CREATE TABLE IF NOT EXISTS requests (
    ts DateTime('UTC'),
    ts_ms Int64,
    request_id String,
    org String,
    team String,
    project String,
    key_id String,
    session_id String,
    route String,
    upstream String,
    decided_model String,
    chain Array(String),
    served_model String,
    served_provider String,
    routing_switch_reason String,
    routing_degraded Array(String),
    refused_code String,
    fallback_reason String,
    attempts Int32,
    status Int32,
    stream UInt8,
    cache_hit UInt8,
    representation_break UInt8,
    cache_discount_applied UInt8,
    prompt_tokens Int64,
    completion_tokens Int64,
    cost_usd Float64,
    latency_ms Float64,
    ttft_ms Float64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (ts_ms, request_id);
