// Package budget meters platform-key spend per key and per team, by
// calendar month (UTC), and keeps it in a SQLite state file so that spend
// survives a restart. The request path reads and adds in memory; a flusher
// writes changed totals in the background and on Close.
package budget

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the embedded SQLite driver
)

// Scope names what spend is counted against: "key:<id>" or "team:<org>/<team>".
type Scope string

// KeyScope is the scope of a key's own spend.
func KeyScope(keyID string) Scope { return Scope("key:" + keyID) }

// TeamScope is the scope of a team's spend.
func TeamScope(org, team string) Scope { return Scope("team:" + org + "/" + team) }

// Month is the UTC calendar month of t, e.g. "2026-11".
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

type entry struct {
	scope Scope
	month string
}

// Ledger holds monthly spend. It is safe for concurrent use.
type Ledger struct {
	db    *sql.DB
	mu    sync.Mutex
	spend map[entry]float64
	dirty map[entry]bool
	// held is what attempts in flight have reserved (in memory only: an
	// attempt does not outlive the process).
	held map[entry]float64
	stop chan struct{}
	done chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// FlushInterval is how often changed totals are written.
const FlushInterval = time.Second

// Open opens (creating if needed) the state file and loads the spend of the
// current and previous months.
func Open(path string) (*Ledger, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(2000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("budget: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS spend (scope TEXT NOT NULL, month TEXT NOT NULL, usd REAL NOT NULL, PRIMARY KEY (scope, month))`); err != nil {
		db.Close()
		return nil, fmt.Errorf("budget: state file %s: %w", path, err)
	}
	l := &Ledger{db: db, spend: map[entry]float64{}, dirty: map[entry]bool{}, held: map[entry]float64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	rows, err := db.Query(`SELECT scope, month, usd FROM spend`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("budget: load %s: %w", path, err)
	}
	for rows.Next() {
		var e entry
		var usd float64
		if err := rows.Scan(&e.scope, &e.month, &usd); err != nil {
			rows.Close()
			db.Close()
			return nil, fmt.Errorf("budget: load %s: %w", path, err)
		}
		l.spend[e] = usd
	}
	rows.Close()
	go l.flusher()
	return l, nil
}

// Spent returns the scope's spend in the month.
func (l *Ledger) Spent(s Scope, month string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spend[entry{s, month}]
}

// Limit is a scope's monthly budget in USD.
type Limit struct {
	Scope Scope
	USD   float64
}

// Available returns the least of the limits' remaining budgets for the
// month: each limit minus its scope's spend and what attempts in flight
// hold. With no limits it is +Inf.
func (l *Ledger) Available(month string, limits ...Limit) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.available(month, limits)
}

func (l *Ledger) available(month string, limits []Limit) float64 {
	avail := math.Inf(1)
	for _, lim := range limits {
		e := entry{lim.Scope, month}
		avail = math.Min(avail, lim.USD-l.spend[e]-l.held[e])
	}
	return avail
}

// Reserve holds budget for one attempt before it is sent, so that attempts
// in flight together cannot spend more than the budgets allow: atomically,
// it grants the smaller of want (+Inf for "as much as there is") and
// [Ledger.Available], holds the grant on every limit's scope, and returns it
// with a release func. Record the attempt's actual cost with [Ledger.Add]
// first, then release; release is safe to call more than once. A grant of 0
// or less holds nothing.
func (l *Ledger) Reserve(month string, want float64, limits ...Limit) (float64, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	grant := math.Min(want, l.available(month, limits))
	if grant <= 0 || math.IsInf(grant, 0) || math.IsNaN(grant) {
		return grant, func() {}
	}
	for _, lim := range limits {
		l.held[entry{lim.Scope, month}] += grant
	}
	var once sync.Once
	return grant, func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, lim := range limits {
				e := entry{lim.Scope, month}
				if l.held[e] -= grant; l.held[e] <= 1e-12 {
					delete(l.held, e)
				}
			}
		})
	}
}

// Add adds spend to every scope for the month.
func (l *Ledger) Add(month string, usd float64, scopes ...Scope) {
	if usd <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range scopes {
		e := entry{s, month}
		l.spend[e] += usd
		l.dirty[e] = true
	}
}

func (l *Ledger) flusher() {
	defer close(l.done)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			_ = l.Flush(context.Background())
		}
	}
}

// Flush writes the changed totals.
func (l *Ledger) Flush(ctx context.Context) error {
	l.mu.Lock()
	if len(l.dirty) == 0 {
		l.mu.Unlock()
		return nil
	}
	batch := make(map[entry]float64, len(l.dirty))
	for e := range l.dirty {
		batch[e] = l.spend[e]
	}
	l.dirty = map[entry]bool{}
	l.mu.Unlock()
	tx, err := l.db.BeginTx(ctx, nil)
	if err == nil {
		for e, usd := range batch {
			if _, err = tx.ExecContext(ctx, `INSERT INTO spend (scope, month, usd) VALUES (?, ?, ?)
				ON CONFLICT (scope, month) DO UPDATE SET usd = excluded.usd`, string(e.scope), e.month, usd); err != nil {
				break
			}
		}
		if err == nil {
			err = tx.Commit()
		} else {
			_ = tx.Rollback()
		}
	}
	if err != nil {
		// Keep the totals dirty so the next flush retries them.
		l.mu.Lock()
		for e := range batch {
			l.dirty[e] = true
		}
		l.mu.Unlock()
		return fmt.Errorf("budget: flush: %w", err)
	}
	return nil
}

// Close flushes and closes the state file. Later calls return the first
// call's result.
func (l *Ledger) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.done
		err := l.Flush(ctx)
		if cerr := l.db.Close(); err == nil {
			err = cerr
		}
		l.closeErr = err
	})
	return l.closeErr
}
