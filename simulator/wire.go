package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
)

// What an upstream makes up for each answer — ids, fingerprints, thinking
// signatures, stream padding — in the forms the recorded answers show
// (testdata/recorded). The content is derived from a seed, so a seed gives
// the same value every time.

const (
	alnum      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	lowerAlnum = "0123456789abcdefghijklmnopqrstuvwxyz"
	crockford  = "0123456789ABCDEFGHJKMNPQRSTVWXYZ" // ULID digits
	hexDigits  = "0123456789abcdef"
)

// seeded returns n bytes derived from seed.
func seeded(seed string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	sum := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

// token returns n characters of alphabet derived from seed.
func token(seed string, n int, alphabet string) string {
	b := seeded(seed, n)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// openRouterID is a generation id: "gen-<created>-<20 letters and digits>".
func openRouterID(created int64, seq int64) string {
	return fmt.Sprintf("gen-%d-%s", created, token(fmt.Sprint("openrouter", seq), 20, alnum))
}

// vercelID is a generation id: "gen_" and a ULID.
func vercelID(seq int64) string {
	return "gen_01" + token(fmt.Sprint("vercel", seq), 24, crockford)
}

// openAIID is a completion id: "chatcmpl-" and 29 letters and digits.
func openAIID(seq int64) string {
	return "chatcmpl-" + token(fmt.Sprint("openai", seq), 29, alnum)
}

// anthropicID is a message id: "msg_01" and 22 letters and digits.
func anthropicID(seq int64) string {
	return "msg_01" + token(fmt.Sprint("anthropic", seq), 22, alnum)
}

// fingerprint is a system_fingerprint: "fp_" and 10 characters of alphabet.
func fingerprint(seed, alphabet string) string {
	return "fp_" + token(seed, 10, alphabet)
}

// obfuscation is the random padding OpenAI adds to each stream chunk: 1 to
// 15 letters and digits.
func obfuscation(seed string) string {
	return token(seed, 1+int(seeded(seed, 1)[0])%15, alnum)
}

// signature is a thinking block's signature: opaque base64, as Anthropic
// sends it.
func signature(seed string) string {
	b := seeded("signature "+seed, 228)
	b[0] = 0x12 // recorded signatures start "E…"
	return base64.StdEncoding.EncodeToString(b)
}

// usd rounds a cost to what the marketplaces print (whole picodollars), so
// float noise never reaches an answer.
func usd(c float64) float64 { return math.Round(c*1e12) / 1e12 }

// usdString is a cost as the Vercel AI Gateway writes it in its report: a
// decimal string.
func usdString(c float64) string { return strconv.FormatFloat(usd(c), 'f', -1, 64) }

// dated returns the id a direct upstream reports for a model asked for as
// asked: an id that already carries a date, as it is; one whose snapshot the
// recordings show, that snapshot; any other with the upstream's suffix
// appended (the date is the simulator's choice; the form is the upstream's,
// and the catalog reads it back with or without it).
func dated(asked string, snapshots map[string]string, suffix string) string {
	if trimVersion(asked) != "" {
		return asked
	}
	if id, ok := snapshots[strings.ToLower(asked)]; ok {
		return id
	}
	return asked + suffix
}

// padJSON inserts n spaces before the closing brace of an object, where
// Anthropic's event data carries its padding.
func padJSON(obj []byte, n int) []byte {
	if n <= 0 || len(obj) == 0 || obj[len(obj)-1] != '}' {
		return obj
	}
	out := make([]byte, 0, len(obj)+n)
	out = append(out, obj[:len(obj)-1]...)
	out = append(out, strings.Repeat(" ", n)...)
	return append(out, '}')
}

// trimVersion is [guardrails.TrimVersion] keeping the id's case: the id
// without its date or version suffix, or "" when it has none.
func trimVersion(id string) string {
	bare := guardrails.TrimVersion(strings.ToLower(id))
	if bare == "" || len(bare) > len(id) {
		return ""
	}
	return id[:len(bare)]
}
