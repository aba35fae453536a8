package lru

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](2, time.Hour)
	c.Put("a", 1)
	c.Put("b", 2)
	_, _ = c.Get("a") // a is now the most recent
	c.Put("c", 3)
	_, ok := c.Get("b")
	require.False(t, ok)
	v, ok := c.Get("a")
	require.True(t, ok)
	require.Equal(t, 1, v)
	require.Equal(t, 2, c.Len())
}

func TestExpires(t *testing.T) {
	now := time.Unix(0, 0)
	c := New[string, int](10, time.Minute)
	c.SetClock(func() time.Time { return now })
	c.Put("a", 1)
	now = now.Add(59 * time.Second)
	_, ok := c.Get("a")
	require.True(t, ok)
	now = now.Add(time.Second)
	_, ok = c.Get("a")
	require.False(t, ok)
	require.Equal(t, 0, c.Len())
}

func TestConcurrentUse(t *testing.T) {
	c := New[string, int](50, time.Hour)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := fmt.Sprint(i % 80)
				c.Put(k, i)
				_, _ = c.Get(k)
			}
		}(g)
	}
	wg.Wait()
	require.LessOrEqual(t, c.Len(), 50)
}

// TestConfigure: a new bound evicts the least recently used at once, and a
// new time to live applies to the entries already stored.
func TestConfigure(t *testing.T) {
	now := time.Unix(0, 0)
	c := New[string, int](3, time.Hour)
	c.SetClock(func() time.Time { return now })
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3)
	_, _ = c.Get("a")
	c.Configure(2, time.Hour)
	require.Equal(t, 2, c.Len())
	_, ok := c.Get("b")
	require.False(t, ok, "b was the least recently used")
	now = now.Add(2 * time.Minute)
	_, ok = c.Get("a")
	require.True(t, ok)
	c.Configure(2, time.Minute)
	_, ok = c.Get("a")
	require.False(t, ok, "stored two minutes ago, past the new one-minute TTL")
	c.Put("d", 4)
	now = now.Add(59 * time.Second)
	_, ok = c.Get("d")
	require.True(t, ok)
	c.Configure(0, time.Minute)
	require.Equal(t, 1, c.Len(), "the bound is at least 1")
}
