package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/store/requestlog"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The identity provider of these tests is zitadel's OpenID provider
// (pkg/op) with its example storage and login page, on loopback: a
// maintained provider implementation, driven through the full flow.
const (
	oidcClientID     = "sluice-pages"
	oidcClientSecret = "sluice-pages-secret"
	oidcPassword     = "verysecure" // the example storage's users' password
)

// groupsStorage is the example storage with a groups claim in the ID token:
// id1 is in compliance-ml, id2 in a group sluice does not map.
type groupsStorage struct{ *storage.Storage }

var testGroups = map[string][]string{"id1": {"staff", "compliance-ml"}, "id2": {"staff"}}

// SetUserinfoFromRequest implements op.CanSetUserinfoFromRequest.
func (s groupsStorage) SetUserinfoFromRequest(ctx context.Context, info *zoidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	info.AppendClaims("groups", testGroups[req.GetSubject()])
	return nil
}

var _ op.CanSetUserinfoFromRequest = groupsStorage{}

// oidcProvider starts the provider on loopback and returns its issuer.
func oidcProvider(t *testing.T, redirect string) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	issuer := "http://" + ts.Listener.Addr().String()
	storage.RegisterClients(storage.WebClient(oidcClientID, oidcClientSecret, redirect))
	ts.Config.Handler = exampleop.SetupServer(issuer, groupsStorage{storage.NewStorage(storage.NewUserStore(issuer))}, nil, false)
	ts.Start()
	t.Cleanup(ts.Close)
	return issuer
}

// newOIDCEnv is the pages' env with [ui.oidc] pointing at a fresh provider:
// compliance-ml reads team ml of acme.
func newOIDCEnv(t *testing.T) (*env, string) {
	t.Helper()
	var issuer string
	t.Setenv("SLUICE_TEST_OIDC_SECRET", oidcClientSecret)
	e := newEnvConfig(t, nil, func(dir, base string) {
		issuer = oidcProvider(t, base+"/ui/oidc/callback")
		f, err := os.OpenFile(filepath.Join(dir, "sluice.toml"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`
[ui.oidc]
issuer = "` + issuer + `"
client_id = "` + oidcClientID + `"
client_secret_env = "SLUICE_TEST_OIDC_SECRET"
redirect_url = "` + base + `/ui/oidc/callback"

[[ui.oidc.groups]]
group = "compliance-ml"
role = "reviewer"
org = "acme"
team = "ml"
`)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	})
	return e, issuer
}

var (
	authReqRE = regexp.MustCompile(`name="id" value="([^"]+)"`)
	metaRE    = regexp.MustCompile(`http-equiv="refresh" content="0; url=([^"]+)"`)
)

// ssoLogin walks the code flow as a browser does: the pages' sign-in link,
// the provider's login form, its redirects back, the pages' callback.
// It returns the callback's answer.
func ssoLogin(t *testing.T, b *browser, user string) page {
	t.Helper()
	login := b.get("/ui/login")
	require.Contains(t, login.body, `href="/ui/oidc/start"`, "the login page offers single sign-on")
	start := b.get("/ui/oidc/start")
	require.Equal(t, http.StatusFound, start.status, start.body)
	authURL, err := url.Parse(start.header.Get("Location"))
	require.NoError(t, err)
	q := authURL.Query()
	require.Equal(t, "S256", q.Get("code_challenge_method"), "PKCE")
	require.NotEmpty(t, q.Get("code_challenge"))
	require.NotEmpty(t, q.Get("nonce"))
	// At the provider: authorize → login form → post → callbacks.
	next := authURL.String()
	var answer page
	for range 10 {
		answer = b.abs(http.MethodGet, next, nil)
		if answer.status == http.StatusOK && strings.Contains(answer.body, `name="password"`) {
			id := authReqRE.FindStringSubmatch(answer.body)
			require.NotNil(t, id, answer.body)
			answer = b.abs(http.MethodPost, authURL.Scheme+"://"+authURL.Host+"/login/username",
				url.Values{"id": {id[1]}, "username": {user}, "password": {oidcPassword}})
		}
		loc := answer.header.Get("Location")
		if answer.status/100 != 3 || loc == "" {
			return answer
		}
		u, err := url.Parse(next)
		require.NoError(t, err)
		ref, err := u.Parse(loc)
		require.NoError(t, err)
		next = ref.String()
	}
	t.Fatalf("the sign-in did not end: %d %s", answer.status, answer.body)
	return answer
}

// TestOIDCSignIn drives the authorization-code flow with PKCE against a
// real provider: a user in a mapped group becomes a reviewer of team ml,
// reads ml's rows only, and holds nothing that calls the model APIs; a
// user in no mapped group is refused; the admin token and analyst keys
// still log in.
func TestOIDCSignIn(t *testing.T) {
	e, issuer := newOIDCEnv(t)
	host := strings.TrimPrefix(issuer, "http://")
	host = host[:strings.LastIndexByte(host, ':')]

	b := e.browser()
	done := ssoLogin(t, b, "test-user@"+host)
	require.Equal(t, http.StatusOK, done.status, done.body)
	m := metaRE.FindStringSubmatch(done.body)
	require.NotNil(t, m, done.body)
	require.Equal(t, "/ui/", m[1])
	over := b.get("/ui/")
	require.Equal(t, http.StatusOK, over.status, over.body)
	require.Contains(t, over.body, "reviewer test-user@zitadel.ch (team ml)")
	rows := b.get("/ui/rows")
	require.Equal(t, http.StatusOK, rows.status)
	ml := e.matching(func(r requestlog.Row) bool { return r.Org == "acme" && r.Team == "ml" })
	require.ElementsMatch(t, idsOf(ml), rowIDs(rows.body), "a team reviewer reads its team's rows only")
	require.Equal(t, http.StatusForbidden, b.get("/ui/rows?team=finance").status)
	// A reviewer's session is no API key: the model APIs refuse the
	// browser, cookie and all.
	api := b.do(http.MethodPost, "/v1/chat/completions", nil)
	require.Equal(t, http.StatusUnauthorized, api.status)

	// A user in no mapped group is refused, with the reason.
	other := e.browser()
	refused := ssoLogin(t, other, "test-user2")
	require.Equal(t, http.StatusForbidden, refused.status)
	require.Contains(t, refused.body, "is in no group that [ui.oidc.groups] maps to a role")
	require.Equal(t, http.StatusSeeOther, other.get("/ui/").status, "no session")

	// A callback whose state this browser did not start is refused.
	forged := e.browser()
	require.Equal(t, http.StatusForbidden, forged.get("/ui/oidc/callback?state=x&code=y").status)

	// The admin token and analyst keys keep working.
	e.browser().mustLogin(adminToken)
	e.browser().mustLogin(secretAnalyst)
}

// abs is browser.do for an absolute URL (the provider's pages).
func (b *browser) abs(method, u string, form url.Values) page {
	b.t.Helper()
	base := b.base
	defer func() { b.base = base }()
	b.base = ""
	return b.do(method, u, form)
}
