package listing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/schemas"
)

// object is one JSON object of a listing with its pointer, read member by
// member so that every problem is located. Unknown members are ignored.
type object struct {
	m   map[string]json.RawMessage
	ptr string
	c   *errs
}

// at joins a member name or index onto the object's pointer.
func (o object) at(tokens ...string) string {
	p := o.ptr
	for _, t := range tokens {
		p += schemas.Pointer(t)
	}
	return p
}

// modelList parses a model list, {"data": [...]}, both marketplaces'
// shape: the elements of data, which must list at least one model
// ([CodeEmpty]).
func modelList(raw []byte, c *errs) ([]json.RawMessage, bool) {
	root, ok := parseRoot(raw, c)
	if !ok {
		return nil, false
	}
	data, ok := root.arr("data", true)
	if !ok {
		return nil, false
	}
	if len(data) == 0 {
		c.add(CodeEmpty, "/data", "the model list lists no models")
		return nil, false
	}
	return data, true
}

// parseRoot decodes a whole listing document as an object; a syntax error
// is located by line.
func parseRoot(raw []byte, c *errs) (object, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			c.list = append(c.list, &Error{Code: CodeSyntax, Where: c.where, Line: lineAt(raw, se.Offset), Message: err.Error()})
		case errors.As(err, &te):
			c.add(CodeShape, "", "the listing is a JSON %s, not an object", kind(bytes.TrimSpace(raw)))
		default:
			c.list = append(c.list, &Error{Code: CodeSyntax, Where: c.where, Message: err.Error()})
		}
		return object{}, false
	}
	if m == nil {
		c.add(CodeShape, "", "the listing is null, not an object")
		return object{}, false
	}
	return object{m: m, c: c}, true
}

func lineAt(raw []byte, off int64) int {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	return bytes.Count(raw[:off], []byte{'\n'}) + 1
}

// kind names the JSON type of a raw value, for messages.
func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// has reports whether the member is present and not null.
func (o object) has(key string) bool { return !isNull(o.m[key]) }

// obj reads a member that must be an object; required says whether absence
// (or null) is a problem.
func (o object) obj(key string, required bool) (object, bool) {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		if required {
			o.c.add(CodeShape, o.at(key), "%s is required: an object", key)
		}
		return object{}, false
	}
	return asObject(raw, o.at(key), o.c)
}

func asObject(raw json.RawMessage, ptr string, c *errs) (object, bool) {
	if kind(raw) != "object" {
		c.add(CodeShape, ptr, "must be an object, not a %s", kind(raw))
		return object{}, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		c.add(CodeShape, ptr, "%v", err)
		return object{}, false
	}
	return object{m: m, ptr: ptr, c: c}, true
}

// arr reads a member that must be an array.
func (o object) arr(key string, required bool) ([]json.RawMessage, bool) {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		if required {
			o.c.add(CodeShape, o.at(key), "%s is required: an array", key)
		}
		return nil, false
	}
	if kind(raw) != "array" {
		o.c.add(CodeShape, o.at(key), "must be an array, not a %s", kind(raw))
		return nil, false
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		o.c.add(CodeShape, o.at(key), "%v", err)
		return nil, false
	}
	return a, true
}

// str reads a string member.
func (o object) str(key string, required bool) string {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		if required {
			o.c.add(CodeShape, o.at(key), "%s is required: a string", key)
		}
		return ""
	}
	var s string
	if kind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		o.c.add(CodeShape, o.at(key), "must be a string, not a %s", kind(raw))
		return ""
	}
	if required && s == "" {
		// An id or a provider's name that is there but empty names
		// nothing the catalog could key on.
		o.c.add(CodeShape, o.at(key), "%s is required: it must not be empty", key)
	}
	return s
}

// num reads a number member; ok is false when it is absent or null.
func (o object) num(key string) (float64, bool) {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		return 0, false
	}
	var f float64
	if kind(raw) != "number" || json.Unmarshal(raw, &f) != nil {
		o.c.add(CodeShape, o.at(key), "must be a number, not a %s", kind(raw))
		return 0, false
	}
	return f, true
}

// integer reads a non-negative integer member; ok is false when it is
// absent or null.
func (o object) integer(key string) (int, bool) {
	f, ok := o.num(key)
	if !ok {
		return 0, false
	}
	if f < 0 || f != float64(int(f)) || f > 1<<40 {
		o.c.add(CodeShape, o.at(key), "must be a non-negative integer, not %v", f)
		return 0, false
	}
	return int(f), true
}

// price is one price of a listing, converted to USD per million tokens.
type price struct {
	set    bool    // the member was present
	perM   float64 // USD per million
	router bool    // "-1": no fixed price (router and dynamic models)
}

// price reads a price member: a string holding a decimal number of USD per
// token (OpenRouter's and Vercel's listings both send strings), converted
// exactly to USD per million tokens. "-1" marks a model with no fixed
// price; any other negative value is a problem.
func (o object) price(key string) price {
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		return price{}
	}
	var s string
	if kind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		o.c.add(CodeShape, o.at(key), "must be a string holding a decimal number of USD per token, not a %s", kind(raw))
		return price{}
	}
	p, err := perMillion(s)
	if err != nil {
		o.c.add(CodeShape, o.at(key), "%v", err)
		return price{}
	}
	return p
}

// perMillion converts a decimal string of USD per token into USD per
// million tokens, exactly up to the final rounding to float64 (so that
// "0.0000025" is 2.5, not 2.4999999999999996).
func perMillion(s string) (price, error) {
	t := strings.TrimSpace(s)
	if t == "-1" {
		return price{set: true, router: true}, nil
	}
	// ParseFloat first: it bounds the exponent cheaply, before big.Rat
	// would expand one like "1e999999999".
	f0, err := strconv.ParseFloat(t, 64)
	if err != nil || len(t) > 64 || math.IsNaN(f0) || math.IsInf(f0, 0) || strings.ContainsAny(t, "xXpP_") {
		return price{}, fmt.Errorf("%q is not a decimal number of USD per token", s)
	}
	if f0 > 1000 {
		return price{}, fmt.Errorf("%q USD per token is not a plausible price", s)
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return price{}, fmt.Errorf("%q is not a decimal number of USD per token", s)
	}
	if r.Sign() < 0 {
		return price{}, fmt.Errorf("%q is negative: a price is at least 0 (only \"-1\" marks a model without a fixed price)", s)
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	f, _ := r.Float64()
	return price{set: true, perM: f}, nil
}
