package listing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/guardrails/listing"
)

// fastClient retries at once, so that the tests wait on nothing.
func fastClient() *listing.Client {
	return &listing.Client{Backoff: time.Millisecond, MaxBackoff: time.Millisecond}
}

// TestGetRetriesThrottlingAndServerErrors: a 429 and a 503 are retried and
// the third try's answer comes back; a 400 is not retried; a 404 is
// CodeNotFound; a server that keeps failing fails after Attempts tries
// with an error naming the URL.
func TestGetRetriesThrottlingAndServerErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch r.URL.Path {
		case "/flaky":
			switch n {
			case 1:
				w.Header().Set("Retry-After", "0")
				http.Error(w, `{"error":{"code":429,"message":"Rate limit exceeded"}}`, http.StatusTooManyRequests)
			case 2:
				http.Error(w, "upstream busy", http.StatusServiceUnavailable)
			default:
				_, _ = w.Write([]byte(`{"data":[]}`))
			}
		case "/bad":
			http.Error(w, "bad request", http.StatusBadRequest)
		case "/down":
			http.Error(w, "down", http.StatusBadGateway)
		default:
			http.Error(w, `{"error":{"code":404,"message":"Resource not found"}}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := fastClient()
	ctx := context.Background()

	body, err := c.Get(ctx, srv.URL+"/flaky")
	require.NoError(t, err)
	require.Equal(t, `{"data":[]}`, string(body))
	require.EqualValues(t, 3, calls.Load())

	calls.Store(0)
	_, err = c.Get(ctx, srv.URL+"/bad")
	require.ErrorContains(t, err, srv.URL+"/bad: listing_fetch: HTTP 400")
	require.EqualValues(t, 1, calls.Load(), "a 400 is not retried")

	calls.Store(0)
	_, err = c.Get(ctx, srv.URL+"/missing")
	require.True(t, listing.IsNotFound(err), "%v", err)
	require.EqualValues(t, 1, calls.Load())

	calls.Store(0)
	_, err = c.Get(ctx, srv.URL+"/down")
	require.ErrorContains(t, err, srv.URL+"/down: listing_fetch: HTTP 502 (after 4 attempts)")
	require.EqualValues(t, listing.DefaultAttempts, calls.Load())
}

// TestGetNamesTheURLOnNetworkErrors: a refused connection fails, after
// its retries, with an error that names the URL.
func TestGetNamesTheURLOnNetworkErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/api/v1/models"
	srv.Close()
	c := fastClient()
	c.Attempts = 2
	_, err := c.Get(context.Background(), url)
	var le *listing.Error
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, listing.CodeFetch, le.Code)
	require.Equal(t, url, le.Where)
	require.Contains(t, le.Message, "after 2 attempts")
}

// TestEndpointsFetchedWithBoundedConcurrency: a live import of many models
// never has more endpoint requests in flight than Concurrency, reports
// its progress up to the total, and sends the API key.
func TestEndpointsFetchedWithBoundedConcurrency(t *testing.T) {
	const models, limit = 40, 3
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/api/v1/models" {
			var b strings.Builder
			b.WriteString(`{"data":[`)
			for i := range models {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(`{"id":"a/m` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","context_length":1000,"pricing":{"prompt":"0.000001","completion":"0.000002"}}`)
			}
			b.WriteString(`]}`)
			_, _ = w.Write([]byte(b.String()))
			return
		}
		if r.URL.Path == "/api/v1/endpoints/zdr" {
			_, _ = w.Write([]byte(`{"data":[{"model_id":"a/maa","provider_name":"OpenAI","tag":"openai","context_length":1000,"pricing":{"prompt":"0.000001","completion":"0.000002"}}]}`))
			return
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		_, _ = w.Write([]byte(`{"data":{"id":"x","endpoints":[{"provider_name":"OpenAI","tag":"openai","context_length":1000,"pricing":{"prompt":"0.000001","completion":"0.000002"}}]}}`))
	}))
	defer srv.Close()
	c := fastClient()
	c.Concurrency, c.APIKey = limit, "sk-test"
	var last, calls int
	c.Progress = func(done, total int) {
		require.Equal(t, models, total)
		require.Greater(t, done, last)
		last, calls = done, calls+1
	}
	imp, err := (&listing.OpenRouter{BaseURL: srv.URL + "/api/v1", Client: c}).Import(context.Background())
	require.NoError(t, err)
	require.Len(t, imp.Models, models)
	for _, m := range imp.Models { // the live ZDR list marks its endpoint, and only it
		require.NotNil(t, m.Endpoints[0].ZeroRetention, m.Slug)
		require.Equal(t, m.Slug == "a/maa", *m.Endpoints[0].ZeroRetention, m.Slug)
	}
	require.LessOrEqual(t, peak.Load(), int32(limit))
	require.Equal(t, models, last)
	require.Equal(t, models, calls)
	for _, a := range auth {
		require.Equal(t, "Bearer sk-test", a)
	}
}

// TestImportFailsOnOneBadEndpointsListing: one endpoints listing of the
// wrong shape fails the whole import, located in its URL.
func TestImportFailsOnOneBadEndpointsListing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"a/good","context_length":10,"pricing":{"prompt":"0","completion":"0"}},{"id":"a/bad","context_length":10,"pricing":{"prompt":"0","completion":"0"}}]}`))
		case "/v1/models/a/bad/endpoints":
			_, _ = w.Write([]byte(`{"data":{"endpoints":[{"provider_name":"X","tag":"x","pricing":{"prompt":"free","completion":"0"}}]}}`))
		default:
			_, _ = w.Write([]byte(`{"data":{"endpoints":[]}}`))
		}
	}))
	defer srv.Close()
	_, err := (&listing.OpenRouter{BaseURL: srv.URL + "/v1", Client: fastClient()}).Import(context.Background())
	require.EqualError(t, err, srv.URL+`/v1/models/a/bad/endpoints#/data/endpoints/0/pricing/prompt: listing_shape: "free" is not a decimal number of USD per token`)
}

// TestWriteFileAtomicKeepsTheMode: the rename keeps the catalog's mode and
// leaves no temporary file behind.
func TestWriteFileAtomicKeepsTheMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "catalog.json")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o640))
	require.NoError(t, listing.WriteFileAtomic(p, []byte("new")))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// TestGetErrorsShowNoSecrets: a failed fetch names its URL without the
// URL's user:password@ and never quotes the upstream's body (which may
// echo the key the request sent), for an HTTP failure and a network
// failure alike (issue 38: both reached /readyz and the log).
func TestGetErrorsShowNoSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"bad key `+r.Header.Get("Authorization")+`"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	withCreds := strings.Replace(srv.URL, "http://", "http://listing-user:listing-password@", 1)
	c := fastClient()
	c.APIKey = "sk-echoed-platform-key"
	_, err := c.Get(context.Background(), withCreds+"/api/v1/models")
	require.ErrorContains(t, err, srv.URL+"/api/v1/models: listing_fetch: HTTP 401")

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c.Attempts = 1
	_, err2 := c.Get(context.Background(), strings.Replace(down.URL, "http://", "http://listing-user:listing-password@", 1)+"/api/v1/models")
	require.Error(t, err2)
	for _, e := range []error{err, err2} {
		for _, secret := range []string{"listing-user", "listing-password", "sk-echoed-platform-key"} {
			require.NotContains(t, e.Error(), secret)
		}
	}
}
