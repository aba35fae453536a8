package requestlog

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"sync"

	"github.com/sluicegw/sluice/profiles"
)

// File is the SQLite request log's file name inside data_dir.
const File = "requests.db"

// Open opens the request-log backend a configuration's [store] names: the
// SQLite file in data_dir (kind "sqlite", the default), ClickHouse (opened
// on first use, so that a gateway can start while it is down: rows then
// spool until it answers), or the store of kind "off". The gateway and
// `sluice rows` both open the log here.
func Open(st *profiles.Store) (Store, error) {
	switch st.Kind {
	case "off":
		return Off(), nil
	case "clickhouse":
		o, err := ClickHouseOptions(st)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return newLazyStore(func(ctx context.Context) (Store, error) {
			return OpenClickHouse(ctx, o)
		}), nil
	default:
		store, err := OpenSQLite(filepath.Join(st.DataDir, File))
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		return store, nil
	}
}

// ClickHouseOptions are the ClickHouse options of a [store] section: the
// address, database and user, the password read from the environment
// variable clickhouse_password_env names (never logged; unset or empty, an
// error), and, with clickhouse_tls, TLS verifying the server's certificate
// against the CAs of clickhouse_ca_file (the system's roots without one) and
// its name against the host of clickhouse_addr.
func ClickHouseOptions(st *profiles.Store) (Options, error) {
	o := Options{Addr: st.ClickHouseAddr, Database: st.ClickHouseDatabase, Username: st.ClickHouseUser}
	pw, err := st.ClickHousePassword()
	if err != nil {
		return o, fmt.Errorf("clickhouse_password_env: %w", err)
	}
	o.Password = pw
	if st.ClickHouseTLS {
		host, _, err := net.SplitHostPort(st.ClickHouseAddr)
		if err != nil {
			host = st.ClickHouseAddr
		}
		roots, err := st.ClickHouseRootCAs()
		if err != nil {
			return o, fmt.Errorf("clickhouse_ca_file: %w", err)
		}
		o.TLS = &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return o, nil
}

// lazyStore opens its backend on first use and again after a failed open, so
// that a gateway can start while its database is down: the writer spools
// rows until the store answers.
type lazyStore struct {
	open func(context.Context) (Store, error)
	mu   sync.Mutex
	s    Store
}

var (
	_ Store      = (*lazyStore)(nil)
	_ Summarizer = (*lazyStore)(nil)
)

func newLazyStore(open func(context.Context) (Store, error)) *lazyStore {
	return &lazyStore{open: open}
}

func (l *lazyStore) get(ctx context.Context) (Store, error) {
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

// Insert implements [Store.Insert].
func (l *lazyStore) Insert(ctx context.Context, rows []Row) error {
	s, err := l.get(ctx)
	if err != nil {
		return err
	}
	return s.Insert(ctx, rows)
}

// Query implements [Store.Query].
func (l *lazyStore) Query(ctx context.Context, f Filter) (Page, error) {
	s, err := l.get(ctx)
	if err != nil {
		return Page{}, err
	}
	return s.Query(ctx, f)
}

// Summarize implements [Summarizer.Summarize]: in the backend's
// database when it aggregates, otherwise over its rows.
func (l *lazyStore) Summarize(ctx context.Context, f Filter, bucket Bucket) ([]DaySummary, error) {
	s, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return Summarize(ctx, s, f, bucket)
}

// Ping implements [Store.Ping].
func (l *lazyStore) Ping(ctx context.Context) error {
	s, err := l.get(ctx)
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// Close implements [Store.Close].
func (l *lazyStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s == nil {
		return nil
	}
	return l.s.Close()
}
