package shared

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Requests in flight together share their round trips. Every pipeline a
// request sends (its admission, its settle) is handed to one of a few
// flushers, and a flusher sends at once whatever has queued while it was
// busy: under load one write to Redis carries the commands of many
// requests, and the syscalls, the connection hand-offs and the wait for an
// answer are paid once for all of them; alone, a request's pipeline leaves
// at once, as before. Each request still reads only its own commands'
// results and errors, and a pipeline is not a transaction either way: the
// scripts are what make a reservation or a rate limit atomic.

const (
	// flushers is how many batches may be on the wire at once: while one
	// waits for Redis the next fills.
	flushers = 2
	// maxBatch bounds the requests one batch carries.
	maxBatch = 64
)

// errClosed answers a pipeline sent after [Client.Close].
var errClosed = errors.New("shared: client closed")

// pipeCall is one request's pipeline on its way through a flusher.
type pipeCall struct {
	fill func(redis.Pipeliner)
	cmds []redis.Cmder
	err  error
	done chan struct{} // one value when cmds and err are set
}

var pipeCalls = sync.Pool{New: func() any { return &pipeCall{done: make(chan struct{}, 1)} }}

// queue is the flushers' input and their lifecycle.
type queue struct {
	mu     sync.RWMutex // held for reading while a call is queued
	closed bool
	calls  chan *pipeCall
	wg     sync.WaitGroup
}

// startFlushers starts the flushers; they stop when c.stop closes, after
// failing whatever is still queued.
func (c *Client) startFlushers() {
	c.q.calls = make(chan *pipeCall, 4*maxBatch)
	for range flushers {
		c.q.wg.Add(1)
		go c.flusher()
	}
}

// closeQueue refuses new calls; the flushers then drain what is queued and
// stop (c.stop is closed by the caller).
func (c *Client) closeQueue() {
	c.q.mu.Lock()
	c.q.closed = true
	c.q.mu.Unlock()
}

// pipe sends fill's commands to Redis with those of the requests in flight
// beside it, and returns its own commands. The error is the one that means
// Redis did not answer them (a missing key, redis.Nil, is an answer).
// Scripts Redis has forgotten (NOSCRIPT, after a restart or SCRIPT FLUSH)
// are loaded again and the call retried once.
func (c *Client) pipe(ctx context.Context, fill func(redis.Pipeliner)) ([]redis.Cmder, error) {
	call := pipeCalls.Get().(*pipeCall)
	call.fill = fill
	c.q.mu.RLock()
	if c.q.closed {
		c.q.mu.RUnlock()
		pipeCalls.Put(call)
		return nil, errClosed
	}
	select {
	case c.q.calls <- call:
	case <-ctx.Done():
		c.q.mu.RUnlock()
		pipeCalls.Put(call)
		return nil, ctx.Err()
	}
	c.q.mu.RUnlock()
	// A queued call is always answered (within the flusher's timeout, or
	// at Close), so the wait needs no context of its own.
	<-call.done
	cmds, err := call.cmds, call.err
	*call = pipeCall{done: call.done}
	pipeCalls.Put(call)
	return cmds, err
}

// flusher sends batches until the client closes.
func (c *Client) flusher() {
	defer c.q.wg.Done()
	batch := make([]*pipeCall, 0, maxBatch)
	ends := make([]int, 0, maxBatch)
	for {
		select {
		case call := <-c.q.calls:
			batch = append(batch[:0], call)
		drain:
			for len(batch) < maxBatch {
				select {
				case call := <-c.q.calls:
					batch = append(batch, call)
				default:
					break drain
				}
			}
			retry := c.send(batch, ends[:0], true)
			if len(retry) > 0 {
				c.send(retry, ends[:0], false)
			}
		case <-c.stop:
			for {
				select {
				case call := <-c.q.calls:
					call.err = errClosed
					call.done <- struct{}{}
				default:
					return
				}
			}
		}
	}
}

// send sends one batch in one pipeline and answers its calls — but for
// those that met NOSCRIPT when retry is set: the scripts are loaded and
// those calls returned (reusing batch's storage) to be sent again.
func (c *Client) send(batch []*pipeCall, ends []int, retry bool) []*pipeCall {
	ctx, cancel := c.ctx(context.Background())
	defer cancel()
	cmds, _ := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, call := range batch {
			call.fill(p)
			ends = append(ends, p.Len())
		}
		return nil
	})
	again := batch[:0]
	start := 0
	for i, call := range batch {
		own := cmds[start:ends[i]:ends[i]]
		start = ends[i]
		if retry && noScript(own) {
			again = append(again, call)
			continue
		}
		// A connection that failed sets its error on every command it
		// carried; another request's failed command is not this one's.
		call.cmds, call.err = own, pipeErr(own, nil)
		call.done <- struct{}{}
	}
	if len(again) == 0 {
		return nil
	}
	for _, s := range scripts {
		if err := s.Load(ctx, c.rdb).Err(); err != nil {
			for _, call := range again {
				call.cmds, call.err = nil, err
				call.done <- struct{}{}
			}
			return nil
		}
	}
	return again
}
