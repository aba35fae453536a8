package requestlog

import (
	"context"
	"errors"
)

// ErrOff is returned (wrapped or as is) by every read of the store [Off]
// returns: with [store] kind = "off" no rows exist to read.
var ErrOff = errors.New(`requestlog: the request log is off ([store] kind = "off"): no rows are recorded`)

// Off returns the store of [store] kind = "off": it discards every row it is
// given and answers every query with [ErrOff]. It exists to measure the
// gateway without its request log and for throwaway development setups; a
// gateway that must answer for its traffic keeps the log on.
func Off() Store { return offStore{} }

type offStore struct{}

var _ Store = offStore{}

// Insert implements [Store.Insert]: the rows are dropped.
func (offStore) Insert(context.Context, []Row) error { return nil }

// Query implements [Store.Query]: always [ErrOff].
func (offStore) Query(context.Context, Filter) (Page, error) { return Page{}, ErrOff }

// Ping implements [Store.Ping]: nothing can be down.
func (offStore) Ping(context.Context) error { return nil }

// Close implements [Store.Close].
func (offStore) Close() error { return nil }
