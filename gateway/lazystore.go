package gateway

import (
	"context"
	"sync"

	"github.com/sluicegw/sluice/gateway/requestlog"
)

// lazyStore opens its backend on first use and again after a failed open, so
// that a gateway can start while its database is down: the writer spools
// rows until the store answers.
type lazyStore struct {
	open func(context.Context) (requestlog.Store, error)
	mu   sync.Mutex
	s    requestlog.Store
}

var (
	_ requestlog.Store      = (*lazyStore)(nil)
	_ requestlog.Summarizer = (*lazyStore)(nil)
)

func newLazyStore(open func(context.Context) (requestlog.Store, error)) *lazyStore {
	return &lazyStore{open: open}
}

func (l *lazyStore) get(ctx context.Context) (requestlog.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s != nil {
		return l.s, nil
	}
	s, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	l.s = s
	return s, nil
}

// Insert implements [requestlog.Store.Insert].
func (l *lazyStore) Insert(ctx context.Context, rows []requestlog.Row) error {
	s, err := l.get(ctx)
	if err != nil {
		return err
	}
	return s.Insert(ctx, rows)
}

// Query implements [requestlog.Store.Query].
func (l *lazyStore) Query(ctx context.Context, f requestlog.Filter) (requestlog.Page, error) {
	s, err := l.get(ctx)
	if err != nil {
		return requestlog.Page{}, err
	}
	return s.Query(ctx, f)
}

// Summarize implements [requestlog.Summarizer.Summarize]: in the backend's
// database when it aggregates, otherwise over its rows.
func (l *lazyStore) Summarize(ctx context.Context, f requestlog.Filter) ([]requestlog.DaySummary, error) {
	s, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return requestlog.Summarize(ctx, s, f)
}

// Ping implements [requestlog.Store.Ping].
func (l *lazyStore) Ping(ctx context.Context) error {
	s, err := l.get(ctx)
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// Close implements [requestlog.Store.Close].
func (l *lazyStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s == nil {
		return nil
	}
	return l.s.Close()
}
