package listing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicegw/sluice/guardrails"
)

// Defaults of a [Client].
const (
	// DefaultConcurrency is how many listings are fetched at once.
	DefaultConcurrency = 8
	// DefaultAttempts is how many times one listing is tried.
	DefaultAttempts = 4
	// DefaultBackoff is the wait before the first retry; it doubles.
	DefaultBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff bounds one wait, a Retry-After included.
	DefaultMaxBackoff = 10 * time.Second
	// DefaultTimeout bounds one HTTP request.
	DefaultTimeout = 30 * time.Second
	// maxListingBytes bounds one listing's body (the full OpenRouter model
	// list is about 1.3 MB).
	maxListingBytes = 64 << 20
)

// Client fetches listings over HTTP. The zero value is usable.
type Client struct {
	// HTTP sends the requests. Default: a client with DefaultTimeout.
	HTTP *http.Client
	// APIKey, when set, is sent as a bearer token (OpenRouter reports
	// latency and throughput only to an authenticated caller). Never
	// logged. Default "": unauthenticated.
	APIKey string
	// Concurrency bounds the listings fetched at once. Default
	// DefaultConcurrency.
	Concurrency int
	// Attempts bounds the tries of one listing: a 429, a 5xx or a network
	// error is retried after a backoff. Default DefaultAttempts.
	Attempts int
	// Backoff is the wait before the first retry, doubled each retry with
	// jitter, honouring Retry-After, at most MaxBackoff. Default
	// DefaultBackoff.
	Backoff time.Duration
	// MaxBackoff bounds one wait. Default DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Progress, when set, is called as endpoint listings complete (done of
	// total), from one goroutine at a time. Default nil.
	Progress func(done, total int)
}

func (c *Client) httpClient() *http.Client {
	if c != nil && c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: DefaultTimeout}
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Get fetches one URL, retrying 429, 5xx and network errors with backoff
// (bounded in count by Attempts and in time by ctx). A 404 is an [Error]
// with [CodeNotFound]; any other failure one with [CodeFetch] naming the
// URL.
func (c *Client) Get(ctx context.Context, url string) ([]byte, error) {
	attempts := orDefault(c.Attempts, DefaultAttempts)
	wait := orDefault(c.Backoff, DefaultBackoff)
	maxWait := orDefault(c.MaxBackoff, DefaultMaxBackoff)
	var last error
	tries := 0
	for try := 1; ; try++ {
		tries = try
		body, retryAfter, err := c.once(ctx, url)
		if err == nil {
			return body, nil
		}
		last = err
		var le *Error
		retryable := !errors.As(err, &le) || le.Code == CodeFetch && retryAfter >= 0
		if !retryable || try >= attempts || ctx.Err() != nil {
			break
		}
		d := wait + time.Duration(rand.Int64N(int64(wait)/2+1))
		if retryAfter > d {
			d = retryAfter
		}
		d = min(d, maxWait)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: stripUserinfo(fmt.Sprintf("%v (after %d attempts; last: %v)", ctx.Err(), try, last))}
		case <-t.C:
		}
		wait = min(wait*2, maxWait)
	}
	var le *Error
	if errors.As(last, &le) && le.Code == CodeFetch && tries > 1 {
		le.Message += fmt.Sprintf(" (after %d attempts)", tries)
	}
	return nil, last
}

// once makes one request. retryAfter is the server's Retry-After (0 when
// none), or -1 when the failure is not worth retrying.
func (c *Client) once(ctx context.Context, url string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, -1, &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: stripUserinfo(err.Error())}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sluice-catalog-import")
	if c != nil && c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, 0, &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: stripUserinfo(redactErr(err, url))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListingBytes+1))
	if err != nil {
		return nil, 0, &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: "reading the body: " + err.Error()}
	}
	switch {
	case resp.StatusCode == http.StatusOK && len(body) > maxListingBytes:
		return nil, -1, &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: fmt.Sprintf("the listing is larger than %d bytes", maxListingBytes)}
	case resp.StatusCode == http.StatusOK:
		return body, 0, nil
	case resp.StatusCode == http.StatusNotFound:
		return nil, -1, &Error{Code: CodeNotFound, Where: stripUserinfo(url), Message: "HTTP 404"}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, retryAfter(resp.Header.Get("Retry-After")), &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	default:
		return nil, -1, &Error{Code: CodeFetch, Where: stripUserinfo(url), Message: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	}
}

// redactErr renders a transport error without repeating the URL (the
// Error names it).
func redactErr(err error, url string) string {
	return strings.ReplaceAll(err.Error(), fmt.Sprintf("Get %q: ", url), "")
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// userinfo matches the user:password@ of a URL in a text.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s"']*@`)

// stripUserinfo removes every URL's user:password@ from a text: a listing
// URL's credentials reach neither an error, the log nor /readyz. The
// upstream's error body is never quoted either (it may echo the key the
// request sent): an error says its HTTP status only.
func stripUserinfo(s string) string { return userinfo.ReplaceAllString(s, "$1") }

// OpenRouter reads OpenRouter's listing: live from BaseURL, or from saved
// files when ModelsFile is set.
type OpenRouter struct {
	// BaseURL is the API base ("https://openrouter.ai/api/v1"): the model
	// list is BaseURL/models and a model's endpoints
	// BaseURL/models/AUTHOR/SLUG/endpoints.
	BaseURL string
	// Client fetches. Default: a zero Client.
	Client *Client
	// ModelsFile is a saved model-list response; with it nothing is
	// fetched. Default "": live.
	ModelsFile string
	// EndpointsDir holds saved endpoints responses, one a model at
	// EndpointsDir/AUTHOR/SLUG.json (by the model's id, or else its
	// canonical slug). A model without a file is left as it is.
	EndpointsDir string
	// ZDRFile is a saved response of the zero-data-retention endpoint
	// list (GET /endpoints/zdr), read instead of fetching it. Default "":
	// fetched from BaseURL when importing live; with ModelsFile and
	// without ZDRFile, zero_retention is not imported.
	ZDRFile string
	// Only limits the import to the models these patterns match. Default
	// none: every model.
	Only []string
}

// Import reads the model list and the endpoints listing of every model
// that needs one (in scope, neither an alias nor a router), a bounded
// number at a time, and builds the [Import]. Any listing that fails
// validation, or a fetch that fails after its retries, fails the whole
// import with errors naming the file or URL; a model whose endpoints
// listing does not exist (404, or no saved file) is left as it is.
func (o *OpenRouter) Import(ctx context.Context) (*Import, error) {
	c := o.Client
	if c == nil {
		c = &Client{}
	}
	var models []ORModel
	var err error
	if o.ModelsFile != "" {
		raw, rerr := readFile(o.ModelsFile)
		if rerr != nil {
			return nil, rerr
		}
		models, err = ParseOpenRouterModels(o.ModelsFile, raw)
	} else {
		u := strings.TrimRight(o.BaseURL, "/") + "/models"
		raw, ferr := c.Get(ctx, u)
		if ferr != nil {
			return nil, ferr
		}
		models, err = ParseOpenRouterModels(u, raw)
	}
	if err != nil {
		return nil, err
	}
	var need []ORModel
	for _, m := range models {
		if matchOnly(o.Only, strings.ToLower(m.ID)) && !m.Alias() && !m.Router {
			need = append(need, m)
		}
	}
	endpoints, err := o.endpoints(ctx, c, need)
	if err != nil {
		return nil, err
	}
	imp := BuildOpenRouter(models, endpoints, o.Only)
	if err := o.zeroRetention(ctx, c, imp); err != nil {
		return nil, err
	}
	imp.FetchedAt = time.Now().UTC()
	return imp, nil
}

// zeroRetention reads the zero-data-retention endpoint list (ZDRFile, or
// BaseURL/endpoints/zdr when live) and marks the import's endpoints by it.
// A live list that does not exist (404) is noted and imports nothing.
func (o *OpenRouter) zeroRetention(ctx context.Context, c *Client, imp *Import) error {
	where := o.ZDRFile
	var raw []byte
	var err error
	switch {
	case where != "":
		raw, err = readFile(where)
	case o.ModelsFile != "":
		return nil
	default:
		where = strings.TrimRight(o.BaseURL, "/") + "/endpoints/zdr"
		raw, err = c.Get(ctx, where)
		if IsNotFound(err) {
			imp.Notes = append(imp.Notes, Note{Model: "endpoints/zdr", Reason: "no zero-data-retention list (HTTP 404): zero_retention not imported"})
			return nil
		}
	}
	if err != nil {
		return err
	}
	zdr, err := ParseOpenRouterZDR(where, raw)
	if err != nil {
		return err
	}
	imp.MarkZeroRetention(zdr)
	return nil
}

// endpoints fetches or reads every model's endpoints listing, at most
// Concurrency at a time; the first failure stops the rest.
func (o *OpenRouter) endpoints(ctx context.Context, c *Client, models []ORModel) (map[string][]OREndpoint, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		out   = make(map[string][]OREndpoint, len(models))
		errs  Errors
		done  int
		jobs  = make(chan ORModel)
		wg    sync.WaitGroup
		total = len(models)
	)
	fail := func(err error) {
		var es Errors
		var e *Error
		switch {
		case errors.As(err, &es):
			errs = append(errs, es...)
		case errors.As(err, &e):
			errs = append(errs, e)
		default:
			errs = append(errs, &Error{Code: CodeFetch, Message: stripUserinfo(err.Error())})
		}
		cancel()
	}
	workers := orDefault(c.Concurrency, DefaultConcurrency)
	if o.ModelsFile != "" {
		workers = min(workers, 4)
	}
	for range min(workers, max(total, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				eps, err := o.endpointsOf(ctx, c, m)
				mu.Lock()
				switch {
				case err == nil:
					out[m.ID] = eps
				case IsNotFound(err):
				case ctx.Err() != nil && len(errs) > 0:
					// stopped by an earlier failure
				default:
					fail(err)
				}
				done++
				if c.Progress != nil {
					c.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, m := range models {
		select {
		case jobs <- m:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		if len(errs) > maxErrors {
			errs = errs[:maxErrors]
		}
		return nil, errs
	}
	if err := ctx.Err(); err != nil && o.ModelsFile == "" {
		return nil, &Error{Code: CodeFetch, Where: o.BaseURL, Message: stripUserinfo(err.Error())}
	}
	return out, nil
}

// endpointsOf reads one model's endpoints listing.
func (o *OpenRouter) endpointsOf(ctx context.Context, c *Client, m ORModel) ([]OREndpoint, error) {
	if o.ModelsFile != "" {
		if o.EndpointsDir == "" {
			return nil, &Error{Code: CodeNotFound, Where: m.ID, Message: "no endpoints directory"}
		}
		var last error
		for _, id := range []string{m.ID, m.CanonicalSlug} {
			if id == "" {
				continue
			}
			p := filepath.Join(o.EndpointsDir, filepath.FromSlash(id)+".json")
			raw, err := readFile(p)
			if err != nil {
				last = err
				continue
			}
			_, eps, err := ParseOpenRouterEndpoints(p, raw)
			return eps, err
		}
		return nil, last
	}
	u := strings.TrimRight(o.BaseURL, "/") + "/" + m.EndpointsPath()
	raw, err := c.Get(ctx, u)
	if err != nil {
		return nil, err
	}
	_, eps, err := ParseOpenRouterEndpoints(u, raw)
	return eps, err
}

// Vercel reads the Vercel AI Gateway's model list: live from BaseURL, or
// from a saved file when ModelsFile is set.
type Vercel struct {
	// BaseURL is the API base ("https://ai-gateway.vercel.sh/v1"): the
	// model list is BaseURL/models.
	BaseURL string
	// Client fetches. Default: a zero Client.
	Client *Client
	// ModelsFile is a saved model-list response; with it nothing is
	// fetched. Default "": live.
	ModelsFile string
	// Only limits the import to the catalog models these patterns match.
	Only []string
}

// Import reads the model list and wraps it as an [Import].
func (v *Vercel) Import(ctx context.Context) (*Import, error) {
	where := v.ModelsFile
	var raw []byte
	var err error
	if where != "" {
		raw, err = readFile(where)
	} else {
		c := v.Client
		if c == nil {
			c = &Client{}
		}
		where = strings.TrimRight(v.BaseURL, "/") + "/models"
		raw, err = c.Get(ctx, where)
	}
	if err != nil {
		return nil, err
	}
	models, err := ParseVercelModels(where, raw)
	if err != nil {
		return nil, err
	}
	imp := BuildVercel(models, v.Only)
	imp.FetchedAt = time.Now().UTC()
	return imp, nil
}

func readFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, &Error{Code: CodeNotFound, Where: path, Message: "no such file"}
	case err != nil:
		return nil, &Error{Code: CodeRead, Where: path, Message: stripUserinfo(err.Error())}
	}
	return raw, nil
}

// Source names for [Import.Source] and the [catalog] source setting.
const (
	// SourceOpenRouter is OpenRouter's listing.
	SourceOpenRouter = guardrails.SourceOpenRouter
	// SourceVercel is the Vercel AI Gateway's listing.
	SourceVercel = guardrails.SourceVercel
)
