package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicegw/sluice/gateway/apierr"
)

// HeaderCallerKey carries a blind caller key: the caller's own provider key,
// sent without naming the upstream it belongs to. The gateway infers the
// upstream from the key's published shape ([keyShapes]) and uses the key,
// as it uses a caller key configured for that upstream, on every attempt
// that goes there: unmetered, its 401 and 403 retryable, the safety net
// applying as configured. The header never leaves the gateway.
const HeaderCallerKey = "X-Sluice-Caller-Key"

// keyShape is a provider's published key prefix and the connector of the
// upstream such a key belongs to.
type keyShape struct{ prefix, connector string }

// keyShapes are the key prefixes each provider publishes, longest first
// where one prefix begins another: OpenRouter's and Anthropic's keys start
// with "sk-" too, so their own prefixes are tried before OpenAI's. A bare
// "sk-" key (OpenAI's legacy user keys, and many other providers' keys) is
// not among them: it names no upstream for certain. docs/security.md lists
// the sources; testdata/callerkeys/shapes.json holds the same table.
var keyShapes = []keyShape{
	{"sk-or-v1-", "openrouter"},
	{"sk-ant-api03-", "anthropic"},
	{"sk-proj-", "openai"},
	{"sk-svcacct-", "openai"},
	{"vck_", "vercel"},
}

// keyConnector returns the connector whose upstream a key's shape names,
// and false for a shape that names none for certain.
func keyConnector(key string) (string, bool) {
	for _, s := range keyShapes {
		if strings.HasPrefix(key, s.prefix) && len(key) > len(s.prefix) {
			return s.connector, true
		}
	}
	return "", false
}

// blindCallerKey reads a blind caller key, if the request carries one, and
// the upstream it belongs to: the one configured upstream of the connector
// its shape names. An unknown or ambiguous shape, or a connector this
// gateway has no upstream of (or several), is a 400: the gateway never
// guesses where a caller's secret goes.
func blindCallerKey(r *http.Request, t *turn) *apierr.Error {
	key := strings.TrimSpace(r.Header.Get(HeaderCallerKey))
	if key == "" {
		return nil
	}
	conn, ok := keyConnector(key)
	if !ok {
		return apierr.New(apierr.CodeCallerKeyUnrecognized, HeaderCallerKey+" has no shape this gateway recognises as one provider's key (OpenRouter sk-or-v1-, Anthropic sk-ant-api03-, OpenAI sk-proj- or sk-svcacct-, Vercel AI Gateway vck_); configure the key for its upstream instead")
	}
	var names []string
	for _, u := range t.snap.Config.Upstreams {
		if u.Connector == conn {
			names = append(names, u.Name)
		}
	}
	if len(names) != 1 {
		return apierr.New(apierr.CodeCallerKeyUnrecognized, fmt.Sprintf("%s is a %s key, and this gateway has %d upstreams of that connector, not one", HeaderCallerKey, conn, len(names)))
	}
	t.blindKey, t.blindUpstream = key, names[0]
	return nil
}

// callerKey returns the caller's own key for an upstream: the key's
// configured one, else the request's blind caller key when it belongs
// there; "" for the platform key.
func (t *turn) callerKey(upstream string) string {
	if k := t.snap.CallerKey(t.key.ID, upstream); k != "" {
		return k
	}
	if t.blindUpstream == upstream {
		return t.blindKey
	}
	return ""
}
