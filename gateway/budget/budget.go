// Package budget meters platform-key spend per key and per team, by
// calendar month (UTC), and keeps it in a SQLite state file so that spend
// survives a restart. The request path reads and adds in memory; a flusher
// writes changed totals in the background and on Close.
package budget

import (
	"context"
	"database/sql"
	"fmt"
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
	stop  chan struct{}
	done  chan struct{}

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
	l := &Ledger{db: db, spend: map[entry]float64{}, dirty: map[entry]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
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
