// Package shared is the hot state a fleet of gateways shares through Redis
// 7 ([shared] redis_url): budgets (reserved and settled atomically by Lua
// scripts), rate limits (GCRA and sets of slots, also Lua), session pins,
// the response cache (bounded in bytes) and targets' health (the failover
// planner's cold windows, mirrored in every replica's memory and kept
// current by pub/sub).
//
// With [Options.Leased] (the gateway's choice) budgets and rate limits are
// leased: each replica takes a slice of each from Redis and decides
// requests on it in memory, a background syncer settles, tops up and
// returns the slices in one pipeline every [Options.SyncInterval], and the
// writes a request leaves go behind in the same pipeline. Near a limit's
// end the replicas fall back to a script per request, so the overrun bound
// of docs/scaling.md holds (lease.go).
//
// Redis is never in the way of a request: every call is bounded by
// [Options.Timeout], and while Redis does not answer the [Client] serves
// from local state — pins, cache and health from the replica's own, rate
// limits and budgets from a conservative local share of what Redis last
// said remained (split by the number of live replicas) — counts it in
// sluice_shared_fallbacks_total, logs the change once, shows it in
// /readyz, and goes back to Redis by itself when it answers again (pushing
// the spend it metered meanwhile).
//
// Without Redis the gateway keeps everything in process; [Limiter] is the
// rate limiter it uses then.
package shared

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sluicegw/sluice/compiler/failover"
)

// Options configure a [Client].
type Options struct {
	// URL is the Redis URL (redis:// or rediss://), without a password.
	// Required.
	URL string
	// Password authenticates to Redis. Default none. Never logged.
	Password string
	// Prefix starts every key. Default "sluice:".
	Prefix string
	// Timeout bounds one round trip. Default 250ms.
	Timeout time.Duration
	// ReplicaID names this replica among the live ones. Default: random.
	ReplicaID string
	// Logger receives the outage and recovery lines. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives the metrics. Default none.
	Registerer prometheus.Registerer
	// Heartbeat is how often the replica says it is alive (and, while Redis
	// is down, how often it tries it again). Default 1s.
	Heartbeat time.Duration
	// Leased serves budgets and rate limits from leases this replica takes
	// from Redis (no round trip for most decisions), reads pins through a
	// local cache and writes settlements, pins and cached answers behind,
	// in batched pipelines. Default false: every decision is a script in
	// Redis and every write waits for its round trip. The gateway sets it.
	Leased bool
	// LeaseTTL is how long a lease outlives its replica's last word: a
	// replica that dies holding one loses it then (a budget's counted as
	// spent, slots freed). Default 30s.
	LeaseTTL time.Duration
	// SyncInterval is how often the leases are settled and topped up, and
	// the writes behind flushed, at the latest. Default 100ms.
	SyncInterval time.Duration
	// Sightings receives the response cache's keys the other replicas
	// sighted first (with Leased; see [Client.Sighted]). Default none.
	Sightings *Sightings
}

// Client is the fleet's shared state on Redis, with its local fallbacks.
// It is safe for concurrent use.
type Client struct {
	rdb     *redis.Client
	prefix  string
	timeout time.Duration
	id      string
	log     *slog.Logger
	beat    time.Duration

	up       atomic.Bool
	replicas atomic.Int64

	mu        sync.Mutex
	downSince time.Time
	lastErr   string

	health  *mirror
	limiter *Limiter
	outage  *outageLedger
	lz      *leases // nil without Options.Leased
	seen    *Sightings
	filter  atomic.Pointer[keyFilter]
	pins    *pinCache
	reads   *reader

	upMetric  prometheus.Gauge
	fallbacks *prometheus.CounterVec

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// ErrURL is returned by [Open] for a Redis URL it cannot read.
var ErrURL = errors.New("shared: invalid redis_url")

// Open connects to Redis and starts the replica's heartbeat and health
// mirror. Redis need not be up: the client then starts on its local
// fallbacks and switches to Redis once it answers.
func Open(ctx context.Context, opts Options) (*Client, error) {
	ro, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrURL, err.Error())
	}
	if opts.Password != "" {
		ro.Password = opts.Password
	}
	if opts.Prefix == "" {
		opts.Prefix = "sluice:"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReplicaID == "" {
		opts.ReplicaID = randomID()
	}
	// Fail fast: a request never waits for a retry on a Redis that is away;
	// the heartbeat notices its return.
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	ro.MaxRetries = -1
	ro.ContextTimeoutEnabled = true
	c := &Client{rdb: redis.NewClient(ro), prefix: opts.Prefix, timeout: opts.Timeout, id: opts.ReplicaID,
		log: opts.Logger, beat: opts.Heartbeat, limiter: NewLimiter(), outage: newOutageLedger(),
		stop: make(chan struct{}), done: make(chan struct{}),
		upMetric: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_shared_up",
			Help: "1 while Redis (the fleet's shared state) answers, 0 while the replica serves from local fallbacks."}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_shared_fallbacks_total",
			Help: "Operations served from local state because Redis did not answer, by what."}, []string{"what"}),
	}
	c.replicas.Store(1)
	if opts.Leased {
		if opts.LeaseTTL <= 0 {
			opts.LeaseTTL = 30 * time.Second
		}
		if opts.SyncInterval <= 0 {
			opts.SyncInterval = 100 * time.Millisecond
		}
		c.lz = newLeases(c, opts.LeaseTTL, opts.SyncInterval)
		c.seen = opts.Sightings
		c.pins = newPinCache()
		c.reads = &reader{c: c}
	}
	redisLogOnce.Do(func() { redis.SetLogger(quietLogger{opts.Logger}) })
	c.health = newMirror(c)
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(c.upMetric, c.fallbacks)
	}
	c.mu.Lock()
	c.downSince, c.lastErr = time.Now(), "not connected yet"
	c.mu.Unlock()
	c.heartbeat(ctx)
	go c.loop()
	go c.health.subscribe()
	if c.lz != nil {
		go c.lz.run()
	}
	return c, nil
}

// Close stops the heartbeat and closes the connections. Later calls do
// nothing.
func (c *Client) Close() error {
	var err error
	c.once.Do(func() {
		if c.lz != nil {
			c.lz.close() // settles and gives back every lease, flushes the writes
		}
		close(c.stop)
		<-c.done
		c.health.close()
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		_ = c.rdb.ZRem(ctx, c.key("replicas"), c.id).Err()
		cancel()
		err = c.rdb.Close()
	})
	return err
}

// LeaseStats returns what this replica's leases did (zero without
// [Options.Leased]).
func (c *Client) LeaseStats() LeaseStats {
	if c.lz == nil {
		return LeaseStats{}
	}
	return c.lz.Stats()
}

// Up reports whether Redis answered the last call.
func (c *Client) Up() bool { return c.up.Load() }

// Health is the planner's health store shared by the fleet: read from this
// replica's mirror, written through to Redis and published to the others.
func (c *Client) Health() failover.HealthStore { return c.health }

// Status is what /readyz shows of the shared state.
type Status struct {
	// Up: Redis answers; otherwise the replica serves from local state.
	Up bool `json:"up"`
	// DownSince is when Redis stopped answering (zero while up).
	DownSince time.Time `json:"down_since,omitzero"`
	// Error is the last failure while down.
	Error string `json:"error,omitempty"`
	// Replicas is the number of live replicas Redis last reported.
	Replicas int64 `json:"replicas"`
	// Leases is what this replica's leases did (absent without
	// [Options.Leased]): decisions served from them and sent to Redis.
	Leases *LeaseStats `json:"leases,omitempty"`
	// CacheFilter is what this replica's cache-key filter did (absent
	// until the cache is first looked up on leases).
	CacheFilter *FilterStats `json:"cache_filter,omitempty"`
}

// Status returns the state of the connection.
func (c *Client) Status() Status {
	st := Status{Up: c.up.Load(), Replicas: c.replicas.Load()}
	if c.lz != nil {
		ls := c.lz.Stats()
		st.Leases = &ls
	}
	if f := c.filter.Load(); f != nil {
		fs := f.stats()
		st.CacheFilter = &fs
	}
	if !st.Up {
		c.mu.Lock()
		st.DownSince, st.Error = c.downSince, c.lastErr
		c.mu.Unlock()
	}
	return st
}

// key names a key under the prefix.
func (c *Client) key(parts ...string) string {
	n := len(c.prefix)
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, c.prefix...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, p...)
	}
	return string(b)
}

// ctx bounds one round trip.
func (c *Client) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(context.WithoutCancel(parent), c.timeout)
}

// failed records that Redis did not answer: the client switches to its
// fallbacks (logged once, in the metric and in /readyz).
func (c *Client) failed(what string, err error) {
	c.fallbacks.WithLabelValues(what).Inc()
	if f := c.filter.Load(); f != nil {
		f.stale() // batches of keys may be lost: reloaded once Redis answers
	}
	if !c.up.Swap(false) {
		return
	}
	c.upMetric.Set(0)
	c.outage.begin(c.replicas.Load())
	c.mu.Lock()
	c.downSince, c.lastErr = time.Now(), err.Error()
	c.mu.Unlock()
	c.log.Error("shared state: Redis does not answer; serving from local state (pins, cache and health local, budgets and rate limits a local share) until it does",
		"op", what, "err", err.Error())
}

// fallback counts an operation served locally while Redis is known down.
func (c *Client) fallback(what string) { c.fallbacks.WithLabelValues(what).Inc() }

// loop beats every Heartbeat while up; while down it tries every quarter of
// it, so recovery is noticed within that.
func (c *Client) loop() {
	defer close(c.done)
	for {
		wait := c.beat
		if !c.up.Load() {
			wait = c.beat / 4
		}
		select {
		case <-c.stop:
			return
		case <-time.After(wait):
		}
		c.heartbeat(context.Background())
	}
}

// replicaWindow is how long a replica counts as live after its last beat.
const replicaWindow = 5 * time.Second

// heartbeat marks this replica alive, counts the live ones, and brings the
// client back to Redis after an outage: the health mirror is reloaded and
// the spend metered meanwhile is added to the shared budgets.
func (c *Client) heartbeat(parent context.Context) {
	ctx, cancel := c.ctx(parent)
	defer cancel()
	now := time.Now().UnixMilli()
	k := c.key("replicas")
	var card *redis.IntCmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, k, redis.Z{Score: float64(now), Member: c.id})
		p.ZRemRangeByScore(ctx, k, "-inf", strconv.FormatInt(now-replicaWindow.Milliseconds(), 10))
		card = p.ZCard(ctx, k)
		return nil
	})
	if err != nil {
		c.mu.Lock()
		c.lastErr = err.Error()
		c.mu.Unlock()
		if c.up.Load() {
			c.failed("heartbeat", err)
		}
		return
	}
	c.replicas.Store(max(card.Val(), 1))
	if c.up.Load() {
		return
	}
	// Back: catch up before serving from Redis again.
	if err := c.health.reload(ctx); err != nil {
		return
	}
	if err := c.outage.flush(ctx, c); err != nil {
		return
	}
	c.mu.Lock()
	since := c.downSince
	c.downSince, c.lastErr = time.Time{}, ""
	c.mu.Unlock()
	c.up.Store(true)
	c.upMetric.Set(1)
	c.log.Info("shared state: Redis answers again; budgets, rate limits, pins, cache and health are shared", "down_for", time.Since(since).Round(time.Millisecond).String())
}

// redisLogOnce routes go-redis's own log lines (one per failed dial while
// Redis is down) to the first client's logger at debug level: the outage
// is logged once by the client itself.
var redisLogOnce sync.Once

type quietLogger struct{ log *slog.Logger }

func (q quietLogger) Printf(ctx context.Context, format string, v ...any) {
	q.log.Debug("redis client: " + fmt.Sprintf(format, v...))
}

// isDown reports whether err means Redis did not answer (as opposed to a
// missing key).
func isDown(err error) bool { return err != nil && !errors.Is(err, redis.Nil) }
