package connectors

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// An azure upstream without api_key_env authenticates with Microsoft Entra
// ID: a bearer token for the Cognitive Services scope, from azidentity's
// ClientSecretCredential when AZURE_TENANT_ID, AZURE_CLIENT_ID and
// AZURE_CLIENT_SECRET are set, from its DefaultAzureCredential (workload
// or managed identity, the Azure CLI, ...) otherwise. The token is kept
// and sent until shortly before it expires, then refreshed by the request
// that finds it stale; a refresh that fails while the old token is still
// valid keeps sending the old one.

// EntraScope is the scope of the tokens an azure upstream asks Microsoft
// Entra ID for.
const EntraScope = "https://cognitiveservices.azure.com/.default"

// entraRefreshMargin is how long before its expiry a token is refreshed
// (unless Entra ID suggested an earlier time): the five minutes Microsoft's
// authentication libraries keep as their own margin.
const entraRefreshMargin = 5 * time.Minute

// entraToken is one upstream's Microsoft Entra ID token source and cache.
type entraToken struct {
	upstream string
	source   string // the credential's kind, for messages
	cred     azcore.TokenCredential
	// mu serialises refreshes: one request fetches, the others wait for it.
	mu  sync.Mutex
	cur atomic.Pointer[bearerToken]
}

// bearerToken is a token's Authorization header value and its times.
type bearerToken struct {
	header    string
	refreshAt time.Time
	expiresOn time.Time
}

// newEntraToken builds the token source of an upstream. caFile (the
// upstream's ca_file, absolute) is trusted beside the system roots for the
// authority host too. AZURE_AUTHORITY_HOST, azidentity's own setting,
// names a sovereign or private authority; instance discovery, which asks
// Microsoft's public authority to vouch for the host, is skipped for a
// host that is not one of Microsoft's clouds.
func newEntraToken(upstream, caFile string) (*entraToken, error) {
	opts := azcore.ClientOptions{
		// A failed token request fails the attempt at once: the gateway
		// answers 502 upstream_credentials_unavailable and tries the next
		// target, rather than holding the request through retries.
		Retry: policy.RetryOptions{MaxRetries: -1},
	}
	if caFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(caFile)
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %q holds no readable certificate", caFile)
		}
		opts.Transport = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	private := false
	if host := os.Getenv("AZURE_AUTHORITY_HOST"); host != "" {
		private = !microsoftAuthority(host)
	}
	t := &entraToken{upstream: upstream}
	var err error
	tenant, client, secret := os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_CLIENT_ID"), os.Getenv("AZURE_CLIENT_SECRET")
	if tenant != "" && client != "" && secret != "" {
		t.source = "ClientSecretCredential"
		t.cred, err = azidentity.NewClientSecretCredential(tenant, client, secret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: private})
	} else {
		t.source = "DefaultAzureCredential"
		t.cred, err = azidentity.NewDefaultAzureCredential(
			&azidentity.DefaultAzureCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: private})
	}
	if err != nil {
		// azidentity's construction errors name settings, not secrets.
		return nil, fmt.Errorf("Microsoft Entra ID credentials (%s): %w", t.source, err)
	}
	return t, nil
}

// microsoftAuthority reports whether an authority host is one of
// Microsoft's clouds' (public, US government, China).
func microsoftAuthority(host string) bool {
	u, err := url.Parse(host)
	if err != nil {
		return false
	}
	for _, c := range []cloud.Configuration{cloud.AzurePublic, cloud.AzureGovernment, cloud.AzureChina} {
		if k, err := url.Parse(c.ActiveDirectoryAuthorityHost); err == nil && strings.EqualFold(k.Host, u.Host) {
			return true
		}
	}
	return false
}

// header returns the Authorization header of a valid token, refreshing it
// when it is due.
func (t *entraToken) header(ctx context.Context) (string, error) {
	now := time.Now()
	if b := t.cur.Load(); b != nil && now.Before(b.refreshAt) {
		return b.header, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.cur.Load()
	if b != nil && now.Before(b.refreshAt) {
		return b.header, nil // refreshed while this request waited
	}
	tok, err := t.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{EntraScope}})
	if err != nil {
		if b != nil && time.Now().Before(b.expiresOn) {
			return b.header, nil
		}
		return "", &CredentialError{Upstream: t.upstream, Err: entraError(t.source, err)}
	}
	refreshAt := tok.ExpiresOn.Add(-entraRefreshMargin)
	if !tok.RefreshOn.IsZero() && tok.RefreshOn.Before(refreshAt) {
		refreshAt = tok.RefreshOn
	}
	b = &bearerToken{header: "Bearer " + tok.Token, refreshAt: refreshAt, expiresOn: tok.ExpiresOn}
	t.cur.Store(b)
	return b.header, nil
}

// entraError says why no token came, without what azidentity quotes of
// the exchange (its messages carry the token endpoint's answer).
func entraError(source string, err error) error {
	var af *azidentity.AuthenticationFailedError
	if errors.As(err, &af) && af.RawResponse != nil {
		return fmt.Errorf("Microsoft Entra ID (%s) answered the token request with HTTP %d", source, af.RawResponse.StatusCode)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Microsoft Entra ID (%s): the token request was cut short (the request ended or timed out)", source)
	}
	return fmt.Errorf("Microsoft Entra ID (%s) gave no token: no credential is configured, or the authority could not be reached", source)
}

// Sign implements [Signer]: the Entra ID token as a bearer, unless the
// request carries a caller's own api-key.
func (a *azureEntra) Sign(req *http.Request, _ []byte) error {
	if _, own := req.Header["Api-Key"]; own {
		return nil
	}
	h, err := a.tokens.header(req.Context())
	if err != nil {
		return err
	}
	req.Header["Authorization"] = []string{h}
	return nil
}
