package shared

import "github.com/redis/go-redis/v9"

// The Lua scripts. Each runs atomically on the Redis server, so replicas
// never interleave inside one: that is what makes a reservation or a rate
// limit hold across the fleet. go-redis sends them by SHA (EVALSHA) and
// falls back to the source once per server (a restarted Redis forgets
// them). Numbers cross as strings: Redis turns a Lua number into an integer.

// admitScript checks every rate limit and, only when all admit, commits
// them and reserves the budget.
//
// KEYS: the n limit keys, then for each of the m budgets its hash and its
// reservation index (a sorted set: reservation id → expiry ms).
// ARGV: now_ms, n, m, id, lease_ms, want (negative: as much as there is),
// then per limit: kind ("rate" | "parallel"), limit, cost, and per budget:
// the limit in USD.
//
// Rate limits are GCRA (the generic cell rate algorithm, a token bucket of
// capacity limit refilled at limit per minute): the key holds the
// theoretical arrival time (TAT); a request of cost c is admitted when
// max(TAT, now) + c·(60000/limit) − 60000 ≤ now. A cost above the limit is
// taken as the limit (a request larger than the whole minute is admitted
// on a full bucket). max_parallel is a sorted set of request ids scored by
// their lease's expiry: ids past it (a replica that died mid-request) are
// dropped before counting.
//
// A budget hash holds spent, held and r:<id> (each reservation's amount);
// reservations past their lease are released before the budget is read.
//
// Returns {admitted 0|1, retry_after_ms, index of the limit refused (1-based,
// 0 none), grant, remaining per budget...}.
var admitScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local m = tonumber(ARGV[3])
local id = ARGV[4]
local lease = tonumber(ARGV[5])
local want = tonumber(ARGV[6])
local a = 7
local tats = {}
for i = 1, n do
  local kind, limit, cost = ARGV[a], tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
  a = a + 3
  if kind == 'rate' then
    if cost > limit then cost = limit end
    local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
    if tat < now then tat = now end
    local new = tat + cost * 60000 / limit
    local allow = new - 60000
    if allow > now then
      return {0, tostring(math.ceil(allow - now)), i, '0'}
    end
    tats[i] = new
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    if redis.call('ZCARD', KEYS[i]) >= limit then
      local first = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
      local wait = 1000
      if first[2] then wait = math.max(1, math.min(1000, tonumber(first[2]) - now)) end
      return {0, tostring(wait), i, '0'}
    end
  end
end
for i = 1, n do
  if tats[i] then
    redis.call('SET', KEYS[i], tostring(tats[i]), 'PX', math.ceil(tats[i] - now) + 1000)
  else
    redis.call('ZADD', KEYS[i], now + lease, id)
    redis.call('PEXPIRE', KEYS[i], lease + 60000)
  end
end
if m == 0 then return {1, '0', 0, '0'} end
local out = {1, '0', 0, '0'}
local grant = want
for j = 1, m do
  local h, x = KEYS[n + 2*j - 1], KEYS[n + 2*j]
  local stale = redis.call('ZRANGEBYSCORE', x, '-inf', now)
  for _, rid in ipairs(stale) do
    local amt = redis.call('HGET', h, 'r:' .. rid)
    if amt then
      redis.call('HINCRBYFLOAT', h, 'held', -tonumber(amt))
      redis.call('HDEL', h, 'r:' .. rid)
    end
  end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', x, '-inf', now) end
  local v = redis.call('HMGET', h, 'spent', 'held')
  local avail = tonumber(ARGV[a + j - 1]) - tonumber(v[1] or '0') - tonumber(v[2] or '0')
  out[4 + j] = tostring(avail)
  if grant < 0 or avail < grant then grant = avail end
end
if grant > 0 and want ~= 0 then
  for j = 1, m do
    local h, x = KEYS[n + 2*j - 1], KEYS[n + 2*j]
    redis.call('HINCRBYFLOAT', h, 'held', grant)
    redis.call('HSET', h, 'r:' .. id, tostring(grant))
    redis.call('ZADD', x, now + lease, id)
    redis.call('PEXPIRE', h, 3456000000)
    redis.call('PEXPIRE', x, 3456000000)
  end
else
  if want == 0 then grant = 0 end
end
out[4] = tostring(grant)
return out
`)

// settleScript charges an attempt's cost and releases its reservation in
// one step, so that spend is never counted twice nor missed between them.
//
// KEYS: per scope its budget hash and reservation index. ARGV: id (""
// without a reservation), cost in USD.
var settleScript = redis.NewScript(`
local id, cost = ARGV[1], tonumber(ARGV[2])
for j = 1, #KEYS / 2 do
  local h, x = KEYS[2*j - 1], KEYS[2*j]
  if id ~= '' then
    local amt = redis.call('HGET', h, 'r:' .. id)
    if amt then
      redis.call('HINCRBYFLOAT', h, 'held', -tonumber(amt))
      redis.call('HDEL', h, 'r:' .. id)
      redis.call('ZREM', x, id)
    end
  end
  if cost > 0 then
    redis.call('HINCRBYFLOAT', h, 'spent', cost)
    redis.call('PEXPIRE', h, 3456000000)
  end
end
return 1
`)

// departScript frees a request's parallel slots and corrects its
// token-rate charge to what the answer used.
//
// KEYS: the parallel sets, then the token-rate keys. ARGV: id, the number
// of parallel sets, then per token key: limit, delta tokens (negative
// gives back what was charged but not used).
var departScript = redis.NewScript(`
local id, np = ARGV[1], tonumber(ARGV[2])
for i = 1, np do redis.call('ZREM', KEYS[i], id) end
local a = 3
for i = np + 1, #KEYS do
  local limit, delta = tonumber(ARGV[a]), tonumber(ARGV[a+1])
  a = a + 2
  local tat = redis.call('GET', KEYS[i])
  if tat then
    local now = tonumber(redis.call('TIME')[1]) * 1000
    local new = tonumber(tat) + delta * 60000 / limit
    if new > now then
      redis.call('SET', KEYS[i], tostring(new), 'PX', math.ceil(new - now) + 1000)
    else
      redis.call('DEL', KEYS[i])
    end
  end
end
return 1
`)

// cachePutScript stores an answer and keeps the cache within its bytes.
//
// KEYS: the entry, the index (entry key → insertion ms), the sizes hash,
// the total. ARGV: value, ttl_ms, max_bytes, now_ms.
// Entries older than the ttl leave the books first, then the oldest go
// until the total fits: a bounded cache evicting by age.
var cachePutScript = redis.NewScript(`
local key, idx, sizes, total = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local val, ttl, max, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local old = redis.call('HGET', sizes, key)
if old then redis.call('DECRBY', total, tonumber(old)) end
redis.call('SET', key, val, 'PX', ttl)
redis.call('ZADD', idx, now, key)
redis.call('HSET', sizes, key, #val)
local t = redis.call('INCRBY', total, #val)
local function drop(k)
  local s = redis.call('HGET', sizes, k)
  if s then t = redis.call('DECRBY', total, tonumber(s)) end
  redis.call('HDEL', sizes, k)
  redis.call('ZREM', idx, k)
  redis.call('DEL', k)
end
local expired = redis.call('ZRANGEBYSCORE', idx, '-inf', now - ttl, 'LIMIT', 0, 1000)
for _, k in ipairs(expired) do drop(k) end
local guard = 0
while t > max and guard < 1000 do
  local oldest = redis.call('ZRANGE', idx, 0, 0)
  if #oldest == 0 then break end
  drop(oldest[1])
  guard = guard + 1
end
return t
`)

// healthScript records a target's failure or answer, publishes the new
// state to every replica's mirror and returns it.
//
// KEYS: the health hash. ARGV: field, "fail" | "ok", now_ms, channel.
var healthScript = redis.NewScript(`
local h, f, what, now, ch = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local v
if what == 'fail' then
  local cur = redis.call('HGET', h, f)
  local n = 0
  if cur then n = tonumber(string.match(cur, '^(%d+)')) end
  v = tostring(n + 1) .. ':' .. now
  redis.call('HSET', h, f, v)
else
  v = '0:0'
  redis.call('HDEL', h, f)
end
redis.call('PUBLISH', ch, f .. '\1' .. v)
return v
`)
