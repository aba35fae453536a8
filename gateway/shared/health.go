package shared

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicegw/sluice/compiler/failover"
)

// mirror is the planner's health store for a fleet. Reads come from this
// replica's memory (the planner reads under its own lock and never waits
// on the network); a failure or a recovering answer is applied here at
// once, then written to Redis in the background, whose script publishes
// it to every replica's mirror. After an outage the mirror is reloaded
// from Redis whole.
type mirror struct {
	c     *Client
	mu    sync.Mutex
	m     map[failover.HealthKey]fails
	queue chan healthWrite
	stop  chan struct{}
	done  chan struct{}
	ps    *redis.PubSub
}

type fails struct {
	n    int
	last time.Time
}

type healthWrite struct {
	field string
	fail  bool
	at    time.Time
}

var _ failover.HealthStore = (*mirror)(nil)

func newMirror(c *Client) *mirror {
	h := &mirror{c: c, m: map[failover.HealthKey]fails{}, queue: make(chan healthWrite, 1024),
		stop: make(chan struct{}), done: make(chan struct{})}
	h.ps = c.rdb.Subscribe(context.Background(), c.key("health", "changes"))
	go h.writer()
	return h
}

func field(k failover.HealthKey) string { return k.Route + "\x00" + k.Upstream + "\x00" + k.Model }

func parseField(f string) (failover.HealthKey, bool) {
	p := strings.Split(f, "\x00")
	if len(p) != 3 {
		return failover.HealthKey{}, false
	}
	return failover.HealthKey{Route: p[0], Upstream: p[1], Model: p[2]}, true
}

// parseValue reads "n:last_ms".
func parseValue(v string) fails {
	a, b, _ := strings.Cut(v, ":")
	n, _ := strconv.Atoi(a)
	ms, _ := strconv.ParseInt(b, 10, 64)
	if n == 0 {
		return fails{}
	}
	return fails{n: n, last: time.UnixMilli(ms)}
}

// Failures implements [failover.HealthStore.Failures].
func (h *mirror) Failures(k failover.HealthKey) (int, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.m[k]
	return f.n, f.last
}

// Failed implements [failover.HealthStore.Failed].
func (h *mirror) Failed(k failover.HealthKey, at time.Time) {
	h.mu.Lock()
	f := h.m[k]
	h.m[k] = fails{n: f.n + 1, last: at}
	h.mu.Unlock()
	h.enqueue(healthWrite{field: field(k), fail: true, at: at})
}

// Answered implements [failover.HealthStore.Answered]. Only an answer that
// clears failures is written: the common answer costs no round trip.
func (h *mirror) Answered(k failover.HealthKey) {
	h.mu.Lock()
	_, had := h.m[k]
	delete(h.m, k)
	h.mu.Unlock()
	if had {
		h.enqueue(healthWrite{field: field(k)})
	}
}

// enqueue hands a write to the background writer; a full queue drops it
// (the local mirror already has it).
func (h *mirror) enqueue(w healthWrite) {
	if !h.c.up.Load() {
		h.c.fallback("health")
		return
	}
	select {
	case h.queue <- w:
	default:
		h.c.fallback("health")
	}
}

func (h *mirror) writer() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case w := <-h.queue:
			ctx, cancel := h.c.ctx(context.Background())
			what := "ok"
			if w.fail {
				what = "fail"
			}
			err := healthScript.Run(ctx, h.c.rdb, []string{h.c.key("health")}, w.field, what,
				strconv.FormatInt(w.at.UnixMilli(), 10), h.c.key("health", "changes")).Err()
			cancel()
			if isDown(err) {
				h.c.failed("health", err)
			}
		}
	}
}

// subscribe applies the other replicas' changes as they are published.
// go-redis resubscribes after a reconnection; the reload after an outage
// covers what was published meanwhile.
func (h *mirror) subscribe() {
	ch := h.ps.Channel()
	for msg := range ch {
		f, v, ok := strings.Cut(msg.Payload, "\x01")
		if !ok {
			continue
		}
		k, ok := parseField(f)
		if !ok {
			continue
		}
		val := parseValue(v)
		h.mu.Lock()
		if val.n == 0 {
			delete(h.m, k)
		} else {
			h.m[k] = val
		}
		h.mu.Unlock()
	}
}

// reload replaces the mirror with Redis's view.
func (h *mirror) reload(ctx context.Context) error {
	all, err := h.c.rdb.HGetAll(ctx, h.c.key("health")).Result()
	if err != nil {
		return err
	}
	m := make(map[failover.HealthKey]fails, len(all))
	for f, v := range all {
		if k, ok := parseField(f); ok {
			if val := parseValue(v); val.n > 0 {
				m[k] = val
			}
		}
	}
	h.mu.Lock()
	h.m = m
	h.mu.Unlock()
	return nil
}

func (h *mirror) close() {
	close(h.stop)
	<-h.done
	_ = h.ps.Close()
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
