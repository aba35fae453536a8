package connectors

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
	"github.com/sluicegw/sluice/profiles"
)

// vertex translates for Google Vertex AI's Anthropic models: the Messages
// API, spoken by the anthropic connector's own translations, posted to the
// publisher model's rawPredict (streamRawPredict for a stream) endpoint of
// one project and region. The body names no model (the path does) and
// carries Vertex's anthropic_version; each request bears a short-lived
// OAuth2 access token from Application Default Credentials. One provider
// ("google-vertex" in the catalog), nothing to rank, no model chain.
type vertex struct {
	// anth speaks the Messages API: the chat translation, the answers'
	// and streams' read-back (as served by google-vertex).
	anth *anthropic
	// name is the configured upstream's, for credential errors.
	name string
	// models is the path of the project's Anthropic publisher models,
	// "/v1/projects/{project}/locations/{region}/publishers/anthropic/models/".
	models string
	// tokens yields the access token, cached and refreshed before it
	// expires.
	tokens oauth2.TokenSource
	// gemini speaks to the upstream's Gemini models (vertex_gemini.go).
	gemini *vertexGemini
}

var (
	_ Connector    = (*vertex)(nil)
	_ Signer       = (*vertex)(nil)
	_ tokenCounter = (*vertex)(nil)
	_ dialects     = (*vertex)(nil)
)

// VertexAnthropicVersion is the anthropic_version member Vertex AI's
// Anthropic models take in place of the anthropic-version header.
const VertexAnthropicVersion = "vertex-2023-10-16"

// vertexScope is the OAuth2 scope an access token for Vertex AI is asked for.
const vertexScope = "https://www.googleapis.com/auth/cloud-platform"

// vertexVersionMember is the body's first member on Vertex, in place of the
// model.
const vertexVersionMember = `{"anthropic_version":"` + VertexAnthropicVersion + `",`

// newVertex builds the connector of one vertex upstream: its project and
// region, and Application Default Credentials (the service-account key
// file GOOGLE_APPLICATION_CREDENTIALS names, gcloud's user credentials,
// workload identity or the metadata server, in the library's order).
func newVertex(u *profiles.Upstream) (*vertex, error) {
	if u.Project == "" {
		return nil, errors.New(`connector "vertex" needs project (the Google Cloud project id)`)
	}
	if u.Region == "" {
		return nil, errors.New(`connector "vertex" needs region (a Vertex AI location such as "us-east5", or "global")`)
	}
	if !vertexName(u.Region) {
		return nil, fmt.Errorf("region %q is not a Vertex AI location (lower-case letters, digits and hyphens)", u.Region)
	}
	if strings.ContainsAny(u.Project, "/?#% \t") {
		return nil, fmt.Errorf("project %q is not a Google Cloud project id", u.Project)
	}
	creds, err := google.FindDefaultCredentials(context.Background(), vertexScope)
	if err != nil {
		return nil, fmt.Errorf("application default credentials could not be loaded: %w", err)
	}
	if err := checkServiceAccount(creds.JSON); err != nil {
		return nil, fmt.Errorf("application default credentials could not be loaded: %w", err)
	}
	v := &vertex{
		anth:   &anthropic{now: newAnthropic().now, provider: "google-vertex"},
		name:   u.Name,
		models: "/v1/projects/" + url.PathEscape(u.Project) + "/locations/" + u.Region + "/publishers/anthropic/models/",
		tokens: creds.TokenSource,
	}
	v.gemini = newVertexGemini(v.models, v.Capabilities())
	return v, nil
}

// checkServiceAccount parses a service-account key file's private key now,
// at load, which the library would first do when a request needs a token:
// a key that cannot sign is the configuration's fault, not a request's.
// Other credential types (user credentials, external accounts) are left to
// the library.
func checkServiceAccount(file []byte) error {
	var f struct {
		Type       string `json:"type"`
		PrivateKey string `json:"private_key"`
	}
	if len(file) == 0 || json.Unmarshal(file, &f) != nil || f.Type != "service_account" {
		return nil
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	if block == nil {
		return errors.New("the service-account key's private_key is not PEM")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if _, err1 := x509.ParsePKCS1PrivateKey(block.Bytes); err1 != nil {
			return errors.New("the service-account key's private_key is neither a PKCS#8 nor a PKCS#1 key")
		}
	}
	return nil
}

// vertexName reports whether s is a plausible location id.
func vertexName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return s != ""
}

// Kind implements [Connector.Kind].
func (*vertex) Kind() string { return "vertex" }

// speaksMessagesOnly implements messagesOnly.
func (*vertex) speaksMessagesOnly() {}

// Capabilities implements [Connector.Capabilities]: a direct provider, with
// the anthropic-beta flags Vertex AI takes.
func (*vertex) Capabilities() compiler.Capabilities {
	return compiler.Capabilities{DirectProvider: "google-vertex", Betas: VertexBetas}
}

// Authorize implements [Connector.Authorize]: Vertex AI takes no key and
// no anthropic-version header; the token is set by [vertex.Sign].
func (*vertex) Authorize(http.Header, string) {}

// Sign implements [Signer]: the bearer access token, fetched from the
// token endpoint of the credentials when the cached one is about to expire.
func (v *vertex) Sign(req *http.Request, _ []byte) error {
	tok, err := v.tokens.Token()
	if err != nil {
		return &CredentialError{Upstream: v.name, Err: tokenError(err)}
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

// tokenError says why a token could not be had, with nothing of the token
// endpoint's answer but its status and error code (an answer may echo what
// it was sent).
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := "the token endpoint refused the credentials"
		if re.Response != nil {
			msg += " (HTTP " + strconv.Itoa(re.Response.StatusCode)
			if code := oauthErrorCode(re); code != "" {
				msg += ", " + code
			}
			msg += ")"
		}
		return errors.New(msg)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("the token endpoint could not be reached: %w", ue.Err)
	}
	return errors.New("no access token: " + err.Error())
}

// oauthErrorCode is an OAuth2 error answer's error code (RFC 6749 §5.2:
// invalid_grant, invalid_client, ...), "" when it has none of that form.
func oauthErrorCode(re *oauth2.RetrieveError) string {
	code := re.ErrorCode
	if code == "" {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(re.Body, &e) == nil {
			code = e.Error
		}
	}
	if len(code) > 40 {
		return ""
	}
	for i := 0; i < len(code); i++ {
		if c := code[i]; !('a' <= c && c <= 'z' || c == '_') {
			return ""
		}
	}
	return code
}

// Translate implements [Connector.Translate]: the anthropic connector's
// translation, the model moved from the body to the path.
func (v *vertex) Translate(body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	n, err := v.anth.Translate(body, plan, out)
	if err != nil {
		return nil, err
	}
	n.Body = vertexBody(n.Body)
	n.Path = v.path(out.NativeModel, isJSONTrue(body["stream"]))
	return n, nil
}

// vertexBody turns a Messages body that begins with its model member (as
// the anthropic translation writes it) into Vertex's: the model out, the
// anthropic_version in.
func vertexBody(b []byte) []byte {
	const lead = `{"model":`
	if bytes.HasPrefix(b, []byte(lead)) {
		if end := jsonscan.SkipString(b, len(lead)); end > 0 && end < len(b) && b[end] == ',' {
			out := make([]byte, 0, len(vertexVersionMember)+len(b)-end)
			return append(append(out, vertexVersionMember...), b[end+1:]...)
		}
	}
	stripped := jsonscan.StripMembers(b, "model")
	if len(stripped) < 2 || stripped[0] != '{' {
		return b
	}
	out := append([]byte(vertexVersionMember), stripped[1:]...)
	if len(stripped) == 2 { // {}: no member follows the version
		out = append(out[:len(out)-2], '}')
	}
	return out
}

// path is the model's rawPredict or streamRawPredict endpoint.
func (v *vertex) path(model string, stream bool) string {
	verb := ":rawPredict"
	if stream {
		verb = ":streamRawPredict"
	}
	return v.models + url.PathEscape(model) + verb
}

// Response implements [Connector.Response]: an answer in the Messages
// shape, read as the anthropic connector reads it.
func (v *vertex) Response(call *Call, body []byte) ([]byte, Result, error) {
	return v.anth.Response(call, body)
}

// NewStream implements [Connector.NewStream].
func (v *vertex) NewStream(call *Call) Stream { return v.anth.NewStream(call) }

// countsTokens implements [tokenCounter]: count-tokens:rawPredict.
func (*vertex) countsTokens() {}

// translateMessages implements [messagesNative]: the caller's body with
// the model out and the anthropic_version in; the anthropic-beta flags the
// check kept ([compiler.Outcome.Betas]: those in [VertexBetas]) go along as
// the header. The check recorded each flag it left out as beta:<flag>.
func (v *vertex) translateMessages(_ *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	h := noHeaders
	if len(out.Betas) > 0 {
		h = http.Header{"Anthropic-Beta": {strings.Join(out.Betas, ",")}}
	}
	return &Native{Path: v.path(out.NativeModel, isJSONTrue(body["stream"])), Header: h,
		Body: encodeBody(body, member{"model", nil}, member{"anthropic_version", vertexVersionJSON})}, nil
}

// translateCount implements [countTranslator]: the count endpoint is the
// publisher's, takes the model in the body, and no anthropic-beta flag (see
// [VertexBetas]): a count is of the request's content, which no flag
// changes.
func (v *vertex) translateCount(_ *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return &Native{Path: v.models + "count-tokens:rawPredict", Header: noHeaders,
		Body: encodeBody(body, member{"model", jsonscan.AppendString(nil, out.NativeModel)}, member{"anthropic_version", vertexVersionJSON})}, nil
}

// vertexVersionJSON is the anthropic_version member's value.
var vertexVersionJSON = []byte(`"` + VertexAnthropicVersion + `"`)

// messagesResponse implements [messagesNative].
func (v *vertex) messagesResponse(call *Call, body []byte) ([]byte, Result, error) {
	return v.anth.messagesResponse(call, body)
}

// newMessagesStream implements [messagesNative].
func (v *vertex) newMessagesStream(call *Call) Stream { return v.anth.newMessagesStream(call) }

// messagesCapabilities implements [messagesNative].
func (v *vertex) messagesCapabilities() compiler.Capabilities { return v.Capabilities() }
