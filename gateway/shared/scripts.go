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
// A budget hash holds spent, held, r:<id> (each reservation's amount) and
// l:<replica> (each replica's lease, see budgetLeaseScript); reservations
// past their lease are released, and leases past theirs counted as spent,
// before the budget is read. A max_parallel set also holds one member
// L:<replica> per replica's lease of slots, whose count is in the hash
// <set>:l.
//
// A reservation that comes up short while replicas hold leases on the
// budget (field lh, their total) puts the budget in exact mode for 10 s
// (field ex): the replicas return what their leases have left at their next
// sync, and starved tells the caller to ask again after it.
//
// Returns {admitted 0|1, retry_after_ms, index of the limit refused (1-based,
// 0 none), grant, remaining per budget..., starved 0|1}.
var admitScript = redis.NewScript(expireLua + `
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
    if slotsInUse(KEYS[i], now) >= limit then
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
local starved = 0
local grant = want
local unbounded = want < 0
for j = 1, m do
  local h, x = KEYS[n + 2*j - 1], KEYS[n + 2*j]
  expireBudget(h, x, now)
  local v = redis.call('HMGET', h, 'spent', 'held', 'lh')
  local avail = tonumber(ARGV[a + j - 1]) - tonumber(v[1] or '0') - tonumber(v[2] or '0')
  out[4 + j] = tostring(avail)
  if unbounded or avail < grant then grant = avail; unbounded = false end
  if want > 0 and avail < want and tonumber(v[3] or '0') > 1e-9 then
    -- Short, while replicas hold leases on it: every replica reserves
    -- exactly from now on (they return their leases' rest at their next
    -- sync), and the caller may ask again once they did.
    redis.call('HSET', h, 'ex', tostring(now + 10000))
    starved = 1
  end
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
out[5 + m] = starved
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

// cacheEvictScript keeps the cache within its bytes. Answers are stored
// with plain commands (SET with the ttl, ZADD of entry|size to the index
// scored by the insertion ms, INCRBY of the total: see [Client.fillCaches]),
// so that a batch of them interleaves with other clients' reads instead of
// holding Redis's one thread for its whole length; this script then runs
// now and then (at most a second apart, and whenever the total is past the
// bound). Entries older than the ttl leave the books first, then the oldest
// go until the total fits: a bounded cache evicting by age. An entry stored
// twice (two replicas missed it together) is counted twice until its older
// record is evicted, which deletes the entry: the bound holds, the entry is
// a miss before its ttl.
//
// KEYS: the index, the total. ARGV: ttl_ms, max_bytes, now_ms.
var cacheEvictScript = redis.NewScript(`
local idx, total = KEYS[1], KEYS[2]
local ttl, max, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = tonumber(redis.call('GET', total) or '0')
local function drop(m)
  local k, size = string.match(m, '^(.*)|(%d+)$')
  if k then
    t = redis.call('DECRBY', total, tonumber(size))
    redis.call('DEL', k)
  end
  redis.call('ZREM', idx, m)
end
local expired = redis.call('ZRANGEBYSCORE', idx, '-inf', now - ttl, 'LIMIT', 0, 1000)
for _, m in ipairs(expired) do drop(m) end
local guard = 0
while t > max and guard < 1000 do
  local oldest = redis.call('ZRANGE', idx, 0, 9)
  if #oldest == 0 then break end
  for _, m in ipairs(oldest) do
    if t <= max then break end
    drop(m)
    guard = guard + 1
  end
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

// expireLua is the expiry shared by the scripts that read a budget or a
// max_parallel set: it runs before either is counted.
//
// expireBudget releases the reservations past their lease (a replica died
// before settling them) and counts the leases past theirs as spent (their
// replica died, or was away from Redis longer than a lease lives: what it
// spent of it is unknown, so all of it is taken as spent — an undercharge
// of the budget's holder at worst, never an overrun). What a lease so
// counted held is remembered in x:<replica>, so that spend the replica
// reports for it later is not counted twice.
//
// slotsInUse drops the request ids and the slot leases past their expiry
// from a max_parallel set and counts the slots held: one per request id,
// and each lease's count.
const expireLua = `
local function expireBudget(h, x, now)
  local stale = redis.call('ZRANGEBYSCORE', x, '-inf', now)
  for _, rid in ipairs(stale) do
    if string.sub(rid, 1, 2) == 'L:' then
      local who = string.sub(rid, 3)
      local amt = redis.call('HGET', h, 'l:' .. who)
      if amt then
        redis.call('HINCRBYFLOAT', h, 'held', -tonumber(amt))
        redis.call('HINCRBYFLOAT', h, 'spent', tonumber(amt))
        redis.call('HINCRBYFLOAT', h, 'x:' .. who, tonumber(amt))
        redis.call('HINCRBYFLOAT', h, 'lh', -tonumber(amt))
        redis.call('HDEL', h, 'l:' .. who)
      end
    else
      local amt = redis.call('HGET', h, 'r:' .. rid)
      if amt then
        redis.call('HINCRBYFLOAT', h, 'held', -tonumber(amt))
        redis.call('HDEL', h, 'r:' .. rid)
      end
    end
  end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', x, '-inf', now) end
end
local function slotsInUse(k, now)
  local lh = k .. ':l'
  local stale = redis.call('ZRANGEBYSCORE', k, '-inf', now)
  for _, m in ipairs(stale) do
    if string.sub(m, 1, 2) == 'L:' then redis.call('HDEL', lh, string.sub(m, 3)) end
  end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', k, '-inf', now) end
  local used = redis.call('ZCARD', k)
  for _, v in ipairs(redis.call('HVALS', lh)) do used = used - 1 + tonumber(v) end
  return used
end
`

// budgetLeaseScript settles what a replica spent of its lease on one
// budget (scope and month), takes back what it returns, and grants it more
// when it asks: never more than its fair share of what remains (what
// remains divided by the live replicas, its own lease included), never
// more than no one holds. Settled spend plus every reservation and lease
// stays within the limit. When what remains (its lease included) is below
// 2 × replicas × the largest single reservation seen on the budget
// (field mw), or while the budget is in exact mode (field ex, set by a
// reservation that came up short), nothing is granted and exact is answered: the replica then
// reserves each request in Redis, as without leases, so that the last
// dollars are never overrun.
//
// KEYS: the budget hash, its reservation index. ARGV: now_ms, replica,
// limit, spent (settled since the last call), returned, asked, replicas,
// the replica's largest reservation, lease_ms.
//
// Spend beyond the lease the replica holds is charged too (a cost above
// its reservation), less what its expired lease was already counted for
// (x:<replica>). Returns {lease now, exact 0|1, unheld after the call}.
var budgetLeaseScript = redis.NewScript(expireLua + `
local h, x = KEYS[1], KEYS[2]
local now, who = tonumber(ARGV[1]), ARGV[2]
local limit, d, ret, ask = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local n, maxw, ttl = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
expireBudget(h, x, now)
local lf, member = 'l:' .. who, 'L:' .. who
local own = tonumber(redis.call('HGET', h, lf) or '0')
local own0 = own
local dheld, dspent = 0, 0
if d > 0 then
  local from = math.min(d, own)
  own = own - from
  dheld = dheld - from
  local beyond = d - from
  if beyond > 0 then
    local xf = 'x:' .. who
    local xs = tonumber(redis.call('HGET', h, xf) or '0')
    local credit = math.min(beyond, xs)
    if credit > 0 then
      if xs - credit > 0 then redis.call('HSET', h, xf, tostring(xs - credit)) else redis.call('HDEL', h, xf) end
    end
    d = d - credit
  end
  dspent = d
end
if ret > own then ret = own end
if ret > 0 then own = own - ret; dheld = dheld - ret end
local v = redis.call('HMGET', h, 'spent', 'held', 'mw', 'ex')
local spent = tonumber(v[1] or '0') + dspent
local held = tonumber(v[2] or '0') + dheld
local mw = tonumber(v[3] or '0')
if maxw > mw then mw = maxw; redis.call('HSET', h, 'mw', tostring(mw)) end
local free = limit - spent - held
local pool = free + own
local exact = 0
if pool < 2 * n * mw or tonumber(v[4] or '0') > now then exact = 1 end
if exact == 0 and ask > 0 then
  local grant = math.min(ask, pool / n - own, free)
  if grant > 0 then own = own + grant; dheld = dheld + grant; free = free - grant end
end
if own < 1e-12 then dheld = dheld - own; own = 0 end
if dspent ~= 0 then redis.call('HINCRBYFLOAT', h, 'spent', dspent) end
if dheld ~= 0 then redis.call('HINCRBYFLOAT', h, 'held', dheld) end
if own ~= own0 then redis.call('HINCRBYFLOAT', h, 'lh', own - own0) end
if own > 0 then
  redis.call('HSET', h, lf, tostring(own))
  redis.call('ZADD', x, now + ttl, member)
else
  redis.call('HDEL', h, lf)
  redis.call('ZREM', x, member)
end
redis.call('PEXPIRE', h, 3456000000)
redis.call('PEXPIRE', x, 3456000000)
return {tostring(own), exact, tostring(free)}
`)

// rateLeaseScript leases tokens of a GCRA limit (rpm or tpm): the tokens
// returned (negative: tokens used beyond what was leased, a usage above its
// admission's charge) move the theoretical arrival time back (forward),
// then up to asked tokens are taken as admissions would take them, never
// more than the bucket's tokens divided by the live replicas. Below 2 ×
// replicas × the largest single cost, nothing is granted and exact is
// answered. A lease's tokens are taken from the bucket when granted, so a
// replica that dies holding them has simply spent them.
//
// KEYS: the limit's key. ARGV: now_ms, limit, returned, asked, replicas,
// the largest cost. Returns {granted, exact 0|1}.
var rateLeaseScript = redis.NewScript(`
local k = KEYS[1]
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local ret, ask, n, maxc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local interval = 60000 / limit
local tat = tonumber(redis.call('GET', k) or '0')
if tat < now then tat = now end
tat = tat - ret * interval
if tat < now then tat = now end
local avail = math.floor((now + 60000 - tat) / interval)
local exact, grant = 0, 0
if avail < 2 * n * maxc then exact = 1 end
if exact == 0 and ask > 0 then
  grant = math.min(ask, math.floor(avail / n))
  if grant < 0 then grant = 0 end
  tat = tat + grant * interval
end
if tat > now then
  redis.call('SET', k, tostring(tat), 'PX', math.ceil(tat - now) + 1000)
else
  redis.call('DEL', k)
end
return {grant, exact}
`)

// parallelLeaseScript leases max_parallel slots: the replica's lease is
// the member L:<replica> of the set, scored by its expiry, with its count
// in <set>:l. It takes back what the replica returns and grants up to what
// it asks, never more than its fair share of the slots not held (its own
// included) nor more than are free. Below 2 × replicas free slots (its own
// included) nothing is granted and exact is answered. A lease past its
// expiry (its replica died) frees its slots.
//
// KEYS: the set. ARGV: now_ms, replica, limit, returned, asked, replicas,
// lease_ms. Returns {slots leased now, exact 0|1}.
var parallelLeaseScript = redis.NewScript(expireLua + `
local k = KEYS[1]
local lh = k .. ':l'
local now, who, limit = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local ret, ask, n, ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local used = slotsInUse(k, now)
local own = tonumber(redis.call('HGET', lh, who) or '0')
if ret > own then ret = own end
own = own - ret
used = used - ret
local free = limit - used
local pool = free + own
local exact = 0
if pool < 2 * n then exact = 1 end
if exact == 0 and ask > 0 then
  local grant = math.min(ask, math.floor(pool / n) - own, free)
  if grant > 0 then own = own + grant end
end
if own > 0 then
  redis.call('HSET', lh, who, own)
  redis.call('ZADD', k, now + ttl, 'L:' .. who)
  redis.call('PEXPIRE', lh, ttl + 60000)
  if redis.call('PTTL', k) < ttl + 60000 then redis.call('PEXPIRE', k, ttl + 60000) end
else
  redis.call('HDEL', lh, who)
  redis.call('ZREM', k, 'L:' .. who)
end
return {own, exact}
`)
