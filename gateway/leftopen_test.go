package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
)

// globexKey adds a key of another org whose team is also called "ml".
func globexKey(secret string) [2]string {
	sum := sha256.Sum256([]byte(secret))
	return [2]string{"[[keys]]\nid = \"k-analyst\"", "[[keys]]\nid = \"k-globex\"\nsha256 = \"" + hex.EncodeToString(sum[:]) +
		"\"\norg = \"globex\"\nteam = \"ml\"\nproject = \"chat\"\n\n[[keys]]\nid = \"k-analyst\""}
}

// TestAnalystScopeIsOrgAndTeam: team names are not global. An analyst of
// acme's ml team sees acme/ml's rows, not globex/ml's, and cannot ask for
// another org.
func TestAnalystScopeIsOrgAndTeam(t *testing.T) {
	const secretGlobex = "sk-globex-ml"
	h := newHarness(t, globexKey(secretGlobex))
	mine, _ := h.post(secretChat, chatBody("openai/gpt-4o", ""))
	theirs, _ := h.post(secretGlobex, chatBody("openai/gpt-4o", `,"user":"globex"`))
	h.rows(2)
	get := func(q url.Values) (int, []string) {
		resp, b := h.get("/api/v1/analytics/invocations?"+q.Encode(), secretAnalyst)
		var inv gateway.Invocations
		if resp.StatusCode == 200 {
			require.NoError(t, json.Unmarshal(b, &inv))
		}
		var ids []string
		for _, r := range inv.Data {
			ids = append(ids, r.RequestID)
		}
		return resp.StatusCode, ids
	}
	status, ids := get(url.Values{})
	require.Equal(t, 200, status)
	require.Equal(t, []string{mine.Header.Get(gateway.HeaderRequestID)}, ids)
	require.NotContains(t, ids, theirs.Header.Get(gateway.HeaderRequestID))
	status, _ = get(url.Values{"org": {"globex"}})
	require.Equal(t, 403, status)
	status, ids = get(url.Values{"org": {"acme"}, "team": {"ml"}})
	require.Equal(t, 200, status)
	require.Len(t, ids, 1)
}

// TestUICookieSecureBehindTrustedProxy: the compliance pages' cookies are
// Secure when the request came over TLS to a proxy listed in [server]
// trusted_proxies, and X-Forwarded-Proto from anyone else changes nothing.
func TestUICookieSecureBehindTrustedProxy(t *testing.T) {
	loginCookie := func(h *harness, headers ...string) *http.Cookie {
		resp, _ := h.do(http.MethodGet, "/ui/login", "", "", headers...)
		require.Equal(t, 200, resp.StatusCode)
		for _, c := range resp.Cookies() {
			if c.Name == "sluice_ui_login" || c.Name == "__Host-sluice_ui_login" {
				require.Equal(t, c.Secure, c.Name == "__Host-sluice_ui_login", "the __Host- prefix exactly when Secure")
				if c.Secure {
					require.Equal(t, "/", c.Path, "__Host- requires Path=/")
					require.Empty(t, c.Domain, "__Host- forbids Domain")
				}
				return c
			}
		}
		t.Fatal("no login cookie")
		return nil
	}
	trusted := newHarness(t, [2]string{"[server]\n", "[server]\ntrusted_proxies = [\"127.0.0.0/8\", \"::1\"]\n"})
	require.True(t, loginCookie(trusted, "X-Forwarded-Proto", "https").Secure)
	require.False(t, loginCookie(trusted, "X-Forwarded-Proto", "http").Secure)
	require.False(t, loginCookie(trusted).Secure)
	// A client behind the proxy cannot prepend its own "https".
	require.False(t, loginCookie(trusted, "X-Forwarded-Proto", "https, http").Secure)

	// A whole login over TLS: the prefixed cookies are the ones read back.
	https := []string{"X-Forwarded-Proto", "https"}
	form := loginCookie(trusted, https...)
	resp, page := trusted.do(http.MethodGet, "/ui/login", "", "", append(https, "Cookie", "__Host-sluice_ui_login="+form.Value)...)
	require.Equal(t, 200, resp.StatusCode)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, m)
	var csrf string
	for _, c := range resp.Cookies() {
		if c.Name == "__Host-sluice_ui_login" {
			csrf = c.Value
		}
	}
	require.Equal(t, string(m[1]), csrf)
	noRedirect := *trusted.ts.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequest(http.MethodPost, trusted.ts.URL+"/ui/login", strings.NewReader(url.Values{"csrf": {csrf}, "token": {adminToken}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Cookie", "__Host-sluice_ui_login="+csrf)
	resp, err = noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "__Host-sluice_ui" {
			session = c
		}
	}
	require.NotNil(t, session, "the session cookie over TLS is __Host-sluice_ui")
	require.True(t, session.Secure)
	require.Equal(t, "/", session.Path)
	pages := func(cookie string) int {
		req, err := http.NewRequest(http.MethodGet, trusted.ts.URL+"/ui/", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Cookie", cookie)
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 200, pages("__Host-sluice_ui="+session.Value), "the prefixed session cookie is read back")
	require.Equal(t, http.StatusSeeOther, pages("sluice_ui="+session.Value), "over TLS the bare name (settable from plain HTTP) is not read")

	untrusted := newHarness(t, [2]string{"[server]\n", "[server]\ntrusted_proxies = [\"10.1.2.3\"]\n"})
	require.False(t, loginCookie(untrusted, "X-Forwarded-Proto", "https").Secure)
}

// dialTimeout is a dialer's own timeout (a net.Error that says Timeout,
// not a context deadline), as a dialer with a Timeout or a TLS handshake
// deadline reports it.
type dialTimeout struct{}

func (dialTimeout) Error() string   { return "i/o timeout" }
func (dialTimeout) Timeout() bool   { return true }
func (dialTimeout) Temporary() bool { return true }

// TestDialTimeoutIs504: a dial that times out answers 504 upstream_timeout,
// like every other upstream deadline.
func TestDialTimeoutIs504(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, sluice.DemoConfig()))
	editConfig(t, dir, testEdits...)
	tr := gateway.NewTransport()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: dialTimeout{}}
	}
	srv, err := gateway.New(gateway.Options{ConfigDir: dir, Transport: tr, Logger: slog.New(slog.DiscardHandler),
		UpstreamURLs: map[string]string{"market": "http://127.0.0.1:9/api/v1"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody("openai/gpt-4o", "")))
	req.Header.Set("Authorization", "Bearer "+secretChat)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusGatewayTimeout, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"upstream_timeout"`)
}

// TestRouteEditInvalidatesItsCachedAnswers: the route's revision is in the
// cache key, so an edit of a route stops its cached answers from serving,
// and leaves another route's alone.
func TestRouteEditInvalidatesItsCachedAnswers(t *testing.T) {
	h := newHarness(t)
	status, b := h.admin("PUT", "/api/v1/routes/summaries", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o-mini"}]}`)
	require.Equal(t, 201, status, string(b))
	status, b = h.admin("PUT", "/api/v1/routes/notes", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`)
	require.Equal(t, 201, status, string(b))
	for _, alias := range []string{"summaries", "notes"} {
		first, _ := h.post(secretChat, chatBody(alias, noChain))
		require.Equal(t, 200, first.StatusCode)
		again, _ := h.post(secretChat, chatBody(alias, noChain))
		require.Equal(t, "hit", again.Header.Get(gateway.HeaderCache), alias)
	}
	status, b = h.admin("PUT", "/api/v1/routes/summaries", adminToken, `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`)
	require.Equal(t, 200, status, string(b))
	edited, _ := h.post(secretChat, chatBody("summaries", noChain))
	require.Empty(t, edited.Header.Get(gateway.HeaderCache), "an edited route's old answer served from the cache")
	require.Equal(t, "openai/gpt-4o", edited.Header.Get(gateway.HeaderServedModel))
	other, _ := h.post(secretChat, chatBody("notes", noChain))
	require.Equal(t, "hit", other.Header.Get(gateway.HeaderCache), "another route's answers are kept")
}
