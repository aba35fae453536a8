package profiles

import (
	"fmt"
	"regexp"
	"strings"
)

// Stable codes of the configuration checks that keep a careless or hostile
// configuration (or admin API call) from exposing credentials, shadowing
// models or wedging the planner.
const (
	// CodeWeightRange: a route target's weight is above [MaxWeight].
	CodeWeightRange = "weight_out_of_range"
	// CodeInvalidAlias: a route alias is not a printable slug of at most
	// [MaxAliasLen] characters (see [AliasPattern]).
	CodeInvalidAlias = "invalid_route_alias"
	// CodeAliasShadowsModel: a route alias is the slug of a catalog model,
	// which it would hide from every caller.
	CodeAliasShadowsModel = "route_alias_shadows_model"
	// CodeCredentialHeader: [server] forward_headers names a header that
	// carries a credential (the caller's sluice secret, a cookie, an API
	// key), which an upstream must never receive.
	CodeCredentialHeader = "credential_forward_header"
)

// MaxWeight is the largest weight a route target may have. With it, the sum
// of a route's weights fits an int64 whatever the number of targets.
const MaxWeight = 1_000_000

// MaxAliasLen is the longest route alias, in bytes.
const MaxAliasLen = 128

// AliasPattern is what a route alias may be: a letter or digit, then
// letters, digits and . _ : / -, at most [MaxAliasLen] in all. It is the
// schema's pattern for routes[].model.
const AliasPattern = `^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`

var aliasRE = regexp.MustCompile(AliasPattern)

// checkAlias returns why a route alias is refused, or "".
func checkAlias(alias string) string {
	if len(alias) > MaxAliasLen {
		return fmt.Sprintf("route alias is %d bytes long; the limit is %d", len(alias), MaxAliasLen)
	}
	if !aliasRE.MatchString(alias) {
		return fmt.Sprintf("route alias %q is not a slug: a letter or digit, then letters, digits and . _ : / - only", alias)
	}
	return ""
}

// credentialHeaders are header names (lower-case) that carry credentials.
var credentialHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "api-key": true, "x-goog-api-key": true, "anthropic-api-key": true,
	"x-amz-security-token": true, "x-auth-token": true,
}

// credentialWords are parts of a header name that say it carries a credential.
var credentialWords = []string{"auth", "cookie", "api-key", "apikey", "api_key", "token", "secret", "password", "credential"}

// IsCredentialHeader reports whether a header name (any case) carries a
// credential: one of the well-known names (Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key, Api-Key,
// X-Goog-Api-Key, Anthropic-Api-Key, X-Amz-Security-Token, X-Auth-Token),
// or a name containing auth, cookie, api-key, apikey, api_key, token,
// secret, password or credential.
func IsCredentialHeader(name string) bool {
	lower := strings.ToLower(name)
	if credentialHeaders[lower] {
		return true
	}
	for _, w := range credentialWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}
