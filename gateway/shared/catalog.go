package shared

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// TryLock takes the fleet-wide lock name for ttl (or until [Client.Unlock]),
// so that one replica does what every replica would otherwise do (fetching
// the catalog's listing once a refresh interval for the fleet). It reports
// true when this replica holds it — and when Redis does not answer: each
// replica then does the work itself, as without a fleet.
func (c *Client) TryLock(ctx context.Context, name string, ttl time.Duration) bool {
	if !c.up.Load() {
		c.fallback("lock")
		return true
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	ok, err := c.rdb.SetNX(rctx, c.key("lock", name), c.id, ttl).Result()
	if isDown(err) {
		c.failed("lock", err)
		return true
	}
	return ok
}

// unlockScript deletes a lock only when this replica still holds it.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Unlock gives back a lock this replica took with TryLock (a lock another
// replica took since its ttl ended is left alone).
func (c *Client) Unlock(ctx context.Context, name string) {
	if !c.up.Load() {
		return
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	if err := unlockScript.Run(rctx, c.rdb, []string{c.key("lock", name)}, c.id).Err(); isDown(err) {
		c.failed("lock", err)
	}
}

// Blob returns what [Client.PutBlob] stored under name (ok false: none, or
// Redis did not answer).
func (c *Client) Blob(ctx context.Context, name string) (b []byte, ok bool) {
	if !c.up.Load() {
		return nil, false
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	b, err := c.rdb.Get(rctx, c.key("blob", name)).Bytes()
	if isDown(err) {
		c.failed("blob", err)
	}
	return b, err == nil
}

// PutBlob stores b under name for ttl, for every replica to read (the
// catalog's listing one replica fetched). It reports whether Redis took it.
func (c *Client) PutBlob(ctx context.Context, name string, b []byte, ttl time.Duration) bool {
	if !c.up.Load() {
		return false
	}
	rctx, cancel := c.ctx(ctx)
	defer cancel()
	if err := c.rdb.Set(rctx, c.key("blob", name), b, ttl).Err(); err != nil {
		c.failed("blob", err)
		return false
	}
	return true
}
