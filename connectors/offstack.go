package connectors

import (
	"encoding/json"
	"runtime"
	"sync"
)

// encoding/json decodes a struct about 2.5 KiB down the stack (its object
// and literal frames are near 1 KiB each), and the request path calls it
// where the stack is already deep: a request's body at the start, a
// stream's chunks at the bottom of the attempt loop. net/http serves a
// connection on one goroutine whose stack keeps the size of its deepest
// request, so those decodes run on a few long-lived decoder goroutines
// instead (OffStack), the caller waiting: a stream's goroutine stays within 8 KiB
// with room for the runtime's own frames (gateway/stack_test.go).

// offStackCall is one call handed to a decoder goroutine.
type offStackCall struct {
	f     func()
	done  chan struct{}
	panic any
}

var (
	offStackCalls = make(chan *offStackCall)
	offStackStart sync.Once
	offStackPool  = sync.Pool{New: func() any { return &offStackCall{done: make(chan struct{}, 1)} }}
)

// OffStack runs f on one of a few long-lived goroutines and returns when it
// has; a panic in f is raised again in the caller. It keeps deep work that
// needs no I/O (a JSON decode, a request's compilation) off the stack of a
// connection's goroutine, the caller waiting meanwhile.
func OffStack(f func()) {
	offStackStart.Do(func() {
		for range max(runtime.GOMAXPROCS(0), 2) {
			go decodeLoop()
		}
	})
	c := offStackPool.Get().(*offStackCall)
	c.f = f
	select {
	case offStackCalls <- c:
	default:
		// Every decoder is busy (or this is one, nesting): a goroutine of
		// its own rather than the caller's stack, and no deadlock.
		go runOffStack(c)
	}
	<-c.done
	p := c.panic
	c.f, c.panic = nil, nil
	offStackPool.Put(c)
	if p != nil {
		panic(p)
	}
}

// OwnStack runs f on a goroutine of its own and returns when it has; a
// panic in f is raised again in the caller. It is OffStack for work that
// may block on I/O (a log line, a flush to the caller), which must not hold
// up one of OffStack's few goroutines.
func OwnStack(f func()) {
	c := offStackPool.Get().(*offStackCall)
	c.f = f
	go runOffStack(c)
	<-c.done
	p := c.panic
	c.f, c.panic = nil, nil
	offStackPool.Put(c)
	if p != nil {
		panic(p)
	}
}

// decodeLoop serves OffStack's calls.
func decodeLoop() {
	for c := range offStackCalls {
		runOffStack(c)
	}
}

func runOffStack(c *offStackCall) {
	defer func() {
		c.panic = recover()
		c.done <- struct{}{}
	}()
	c.f()
}

// unmarshalOffStack is json.Unmarshal run by OffStack.
func unmarshalOffStack(data []byte, v any) (err error) {
	OffStack(func() { err = json.Unmarshal(data, v) })
	return err
}
