// Package holders records, for a gateway without the fleet's Redis, where
// each stored Responses API response is: the upstream that stored it and
// the key whose request it answered. The record is the only thing that
// lets the owner continue, read or delete the response, and keeps every
// other key out (the upstream holds all tenants' responses under one
// platform key), so it must outlive the process: it is a table of the
// SQLite state file in data_dir, read when the gateway's in-memory table
// does not have an id (after a restart or an eviction). Writes are queued
// and flushed in the background (at once, and on Close), so that the
// request path never waits on the file; a read sees what is queued.
package holders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the embedded SQLite driver
)

// Holder is where a stored response is.
type Holder struct {
	// Upstream is the name of the upstream that stored it.
	Upstream string
	// Key is the id of the key whose request it answered.
	Key string
}

// change is a queued write: a record until expires, or a deletion (zero
// expires).
type change struct {
	h       Holder
	expires time.Time
}

// Table is the holders' table. It is safe for concurrent use.
type Table struct {
	db  *sql.DB
	now func() time.Time

	flushMu sync.Mutex // one flush at a time
	mu      sync.Mutex
	pending map[string]change
	writing map[string]change // the batch a flush is writing
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// purgeEvery is how often expired records are deleted from the file.
const purgeEvery = time.Hour

// Open opens (creating if needed) the table in the SQLite file at path.
func Open(path string) (*Table, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(2000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("holders: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS response_holders (id TEXT PRIMARY KEY, upstream TEXT NOT NULL,
		key_id TEXT NOT NULL, expires INTEGER NOT NULL)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("holders: state file %s: %w", path, err)
	}
	t := &Table{db: db, now: time.Now, pending: map[string]change{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go t.flusher()
	return t, nil
}

// Put records that h holds the response id, for ttl. It does not wait for
// the file.
func (t *Table) Put(id string, h Holder, ttl time.Duration) {
	t.queue(id, change{h: h, expires: t.now().Add(ttl)})
}

// Delete forgets the response id (it was deleted). It does not wait for
// the file.
func (t *Table) Delete(id string) { t.queue(id, change{}) }

func (t *Table) queue(id string, c change) {
	t.mu.Lock()
	t.pending[id] = c
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default: // a flush is due already
	}
}

// Get returns where the response id is; ok is false when it is not
// recorded, or its record has expired.
func (t *Table) Get(ctx context.Context, id string) (h Holder, ok bool, err error) {
	now := t.now()
	t.mu.Lock()
	c, queued := t.pending[id]
	if !queued {
		c, queued = t.writing[id]
	}
	t.mu.Unlock()
	if queued {
		return c.h, c.expires.After(now), nil
	}
	err = t.db.QueryRowContext(ctx, `SELECT upstream, key_id FROM response_holders WHERE id = ? AND expires > ?`,
		id, now.UnixMilli()).Scan(&h.Upstream, &h.Key)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Holder{}, false, nil
	case err != nil:
		return Holder{}, false, fmt.Errorf("holders: read %s: %w", id, err)
	}
	return h, true, nil
}

func (t *Table) flusher() {
	defer close(t.done)
	purge := time.NewTicker(purgeEvery)
	defer purge.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-t.kick:
			_ = t.Flush(context.Background())
		case <-purge.C:
			_, _ = t.db.Exec(`DELETE FROM response_holders WHERE expires <= ?`, t.now().UnixMilli())
		}
	}
}

// Flush writes the queued changes in one transaction; on failure they stay
// queued (unless newer ones replaced them) for the next flush.
func (t *Table) Flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	if len(t.pending) == 0 {
		t.mu.Unlock()
		return nil
	}
	// Until written, the batch stays visible to Get.
	batch := t.pending
	t.pending, t.writing = map[string]change{}, batch
	t.mu.Unlock()
	err := t.write(ctx, batch)
	t.mu.Lock()
	t.writing = nil
	if err != nil { // queued again, unless a newer change replaced it
		for id, c := range batch {
			if _, newer := t.pending[id]; !newer {
				t.pending[id] = c
			}
		}
	}
	t.mu.Unlock()
	if err != nil {
		return fmt.Errorf("holders: flush: %w", err)
	}
	return nil
}

func (t *Table) write(ctx context.Context, batch map[string]change) error {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for id, c := range batch {
		if c.expires.IsZero() {
			_, err = tx.ExecContext(ctx, `DELETE FROM response_holders WHERE id = ?`, id)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO response_holders (id, upstream, key_id, expires) VALUES (?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET upstream = excluded.upstream, key_id = excluded.key_id, expires = excluded.expires`,
				id, c.h.Upstream, c.h.Key, c.expires.UnixMilli())
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// Close writes what is queued and closes the file. Later calls return the
// first call's result.
func (t *Table) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		close(t.stop)
		<-t.done
		t.closeErr = errors.Join(t.Flush(ctx), t.db.Close())
	})
	return t.closeErr
}
