package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/simulator/errorbodies"
)

// classifyCase is one expected classification: a recorded upstream answer
// (testdata/errors) or a synthetic one (testdata/failover/classify).
type classifyCase struct {
	name       string
	status     int
	header     http.Header
	body       []byte
	class      string
	categories []string
	retryAfter time.Duration
}

// corpusFile is the shape of testdata/failover/classify/*.json. body is JSON
// replayed as is; body_text is replayed as raw bytes (for non-JSON bodies).
type corpusFile struct {
	Status            int               `json:"status"`
	Headers           map[string]string `json:"headers"`
	Body              json.RawMessage   `json:"body"`
	BodyText          *string           `json:"body_text"`
	Class             string            `json:"class"`
	Categories        []string          `json:"categories"`
	RetryAfterSeconds int               `json:"retry_after_seconds"`
}

func headerOf(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

func classifyCases(t testing.TB) []classifyCase {
	t.Helper()
	recs, err := errorbodies.Load()
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	var cases []classifyCase
	for _, n := range errorbodies.Names(recs) {
		r := recs[n]
		cases = append(cases, classifyCase{name: "recorded/" + n, status: r.Status, header: headerOf(r.Headers),
			body: r.Body, class: r.Class, categories: r.Categories})
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "failover", "classify", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var c corpusFile
		require.NoError(t, json.Unmarshal(raw, &c), f)
		body := []byte(c.Body)
		if c.BodyText != nil {
			body = []byte(*c.BodyText)
		}
		cases = append(cases, classifyCase{name: "synthetic/" + strings.TrimSuffix(filepath.Base(f), ".json"),
			status: c.Status, header: headerOf(c.Headers), body: body, class: c.Class, categories: c.Categories,
			retryAfter: time.Duration(c.RetryAfterSeconds) * time.Second})
	}
	return cases
}

// TestClassify replays every recorded upstream error answer and every
// synthetic case; class and categories must match the labels.
func TestClassify(t *testing.T) {
	for _, c := range classifyCases(t) {
		t.Run(c.name, func(t *testing.T) {
			f := Classify(c.status, c.header, c.body)
			assert.Equal(t, c.class, f.Class)
			assert.Equal(t, normCats(c.categories), normCats(f.Categories))
			assert.Equal(t, c.status, f.Status)
			if c.header.Get("Retry-After") != "" && c.retryAfter == 0 {
				return // recorded headers: only the synthetic cases state the expectation
			}
			assert.Equal(t, c.retryAfter, f.RetryAfter)
		})
	}
}

func normCats(c []string) []string {
	if len(c) == 0 {
		return nil
	}
	return c
}

func TestFailureString(t *testing.T) {
	recs, err := errorbodies.Load()
	require.NoError(t, err)
	for name, want := range map[string]string{
		"openai/content_policy_violation": "refusal:content_policy_violation",
		"azure/content_filter":            "refusal:hate",
		"openrouter/moderation":           "refusal:violence",
		"anthropic/rate_limit_error":      "throttled",
		"anthropic/overloaded_error":      "throttled",
		"openrouter/timeout":              "timeout",
		"openai/context_length_exceeded":  "overflow",
	} {
		r, ok := recs[name]
		require.True(t, ok, name)
		assert.Equal(t, want, Classify(r.Status, nil, r.Body).String(), name)
	}
	assert.Equal(t, "refusal", Failure{Class: ClassRefusal}.String())
	assert.Equal(t, "overflow", PlanningOverflow().String())
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "first byte deadline" }
func (timeoutErr) Timeout() bool { return true }

// notTimeoutWrapper claims no timeout itself but wraps one.
type notTimeoutWrapper struct{ err error }

func (w notTimeoutWrapper) Error() string { return "wrapped: " + w.err.Error() }
func (w notTimeoutWrapper) Timeout() bool { return false }
func (w notTimeoutWrapper) Unwrap() error { return w.err }

func TestClassifyTransport(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	errFirstByte := fmt.Errorf("upstream first byte: %w", context.DeadlineExceeded)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"refused", refused, ClassConnection},
		{"reset", reset, ClassConnection},
		{"unexpected eof", io.ErrUnexpectedEOF, ClassConnection},
		{"eof wrapped", fmt.Errorf("read status line: %w", io.EOF), ClassConnection},
		{"nil", nil, ClassConnection},
		{"cancelled", context.Canceled, ClassConnection},
		{"context deadline", context.DeadlineExceeded, ClassTimeout},
		{"gateway sentinel wrapping deadline", errFirstByte, ClassTimeout},
		{"custom Timeout()", timeoutErr{}, ClassTimeout},
		{"custom Timeout() wrapped", fmt.Errorf("dial: %w", timeoutErr{}), ClassTimeout},
		{"Timeout() false over a timeout", notTimeoutWrapper{timeoutErr{}}, ClassTimeout},
		{"joined", errors.Join(io.EOF, timeoutErr{}), ClassTimeout},
		{"os deadline", os.ErrDeadlineExceeded, ClassTimeout},
		{"net timeout", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, ClassTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := ClassifyTransport(c.err)
			assert.Equal(t, c.want, f.Class)
			assert.Zero(t, f.Status)
		})
	}
}

func TestClassifyStreamError(t *testing.T) {
	for _, c := range []struct {
		typ, code string
		want      string
		cats      []string
		status    int
	}{
		{"overloaded_error", "", ClassThrottled, []string{"overloaded_error"}, 0},
		{"api_error", "", ClassServerError, []string{"api_error"}, 0},
		{"rate_limit_error", "", ClassThrottled, []string{"rate_limit_error"}, 0},
		{"invalid_request_error", "", ClassClientError, []string{"invalid_request_error"}, 0},
		{"", "502", ClassServerError, nil, 502},
		{"", "429", ClassThrottled, nil, 429},
		{"", "context_length_exceeded", ClassOverflow, []string{"context_length_exceeded"}, 0},
		{"", "content_policy_violation", ClassRefusal, []string{"content_policy_violation"}, 0},
		{"", "timeout", ClassTimeout, []string{"timeout"}, 0},
		{"", "", ClassServerError, nil, 0},
	} {
		t.Run(c.typ+"/"+c.code, func(t *testing.T) {
			f := ClassifyStreamError(c.typ, c.code)
			assert.Equal(t, c.want, f.Class)
			assert.Equal(t, c.cats, normCats(f.Categories))
			assert.Equal(t, c.status, f.Status)
		})
	}
}

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		class             string
		platform, ownsKey bool
	}{
		{ClassThrottled, true, true},
		{ClassTimeout, true, true},
		{ClassServerError, true, true},
		{ClassConnection, true, true},
		{ClassOverflow, true, true},
		{ClassUnauthorized, false, true},
		{ClassRefusal, false, false},
		{ClassClientError, false, false},
	} {
		f := Failure{Class: c.class}
		assert.Equal(t, c.platform, Retryable(f, false), c.class)
		assert.Equal(t, c.ownsKey, Retryable(f, true), c.class+" caller key")
	}
}

func TestCovers(t *testing.T) {
	hate := Failure{Class: ClassRefusal, Categories: []string{"content_filter", "hate"}}
	violence := Failure{Class: ClassRefusal, Categories: []string{"violence"}}
	throttled := Failure{Class: ClassThrottled}
	for _, c := range []struct {
		name  string
		takes []string
		f     Failure
		want  bool
	}{
		{"refusal covers every refusal", []string{"refusal"}, violence, true},
		{"refusal:hate covers a hate refusal", []string{"refusal:hate"}, hate, true},
		{"refusal:hate does not cover violence", []string{"refusal:hate"}, violence, false},
		{"refusal:violence covers violence", []string{"refusal:violence"}, violence, true},
		{"refusal does not cover throttled", []string{"refusal"}, throttled, false},
		{"class matches exactly", []string{"throttled", "timeout"}, throttled, true},
		{"server_error is not throttled", []string{"throttled", "timeout"}, Failure{Class: ClassServerError}, false},
		{"empty list covers nothing", nil, throttled, false},
		{"refusal:throttled is not a class", []string{"refusal:throttled"}, throttled, false},
	} {
		assert.Equal(t, c.want, Covers(c.takes, c.f), c.name)
	}
}

// FuzzClassify never panics and always answers one of the classes.
func FuzzClassify(f *testing.F) {
	for _, c := range classifyCases(f) {
		f.Add(c.status, c.body)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		got := Classify(status, http.Header{"Retry-After": {string(body)}}, body)
		if !slices.Contains(Classes, got.Class) {
			t.Fatalf("class %q is not a known class", got.Class)
		}
		if got.Class != ClassRefusal && len(got.Categories) > 1 {
			t.Fatalf("non-refusal with several categories: %v", got.Categories)
		}
		if s := got.String(); s == "" {
			t.Fatal("empty fallback reason")
		}
		sf := ClassifyStreamError(string(body), fmt.Sprint(status))
		if !slices.Contains(Classes, sf.Class) {
			t.Fatalf("stream class %q is not a known class", sf.Class)
		}
	})
}

func TestClassesSorted(t *testing.T) {
	// The classes agree with the recordings' vocabulary plus connection.
	want := append(slices.Clone(errorbodies.Classes), ClassConnection)
	got := slices.Clone(Classes)
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got)
}

func BenchmarkClassify(b *testing.B) {
	recs, err := errorbodies.Load()
	require.NoError(b, err)
	for _, name := range []string{"openai/rate_limit_exceeded", "azure/content_filter", "anthropic/overloaded_error"} {
		r := recs[name]
		h := headerOf(r.Headers)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(r.Status, h, r.Body)
			}
		})
	}
}
