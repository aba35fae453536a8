package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The gateway's shallow check of a Messages API request, run on every
// Messages request, native ones included: a scan of the bytes for what
// every upstream would refuse, deferring to the full translation
// (translate_messages_chat.go, translate_messages_chat_turns.go) wherever
// the scan finds a turn at fault.

// CheckMessages checks a Messages API request body (sluice's routing
// member removed) for what every upstream would refuse, with the JSON
// pointer of the member at fault: a model; a positive max_tokens (unless
// count is set: a token count takes none); a non-empty list of turns, each
// of role user or assistant with string or block-list content, not every
// one of them empty; a boolean stream; a thinking object of a known type,
// with a positive budget when enabled. It is the gateway's check, shallow
// on purpose, like [ParseResponses]: a request passed natively is
// validated by its upstream, and one translated is read whole by its
// translation ([ParseMessages] is that reading's verdict).
func CheckMessages(body Body, count bool) *TranslateError {
	// In the full translation's order: members sorted, the required ones
	// missing after. Scanned, not decoded: this runs on every Messages
	// request, native ones included.
	if v, ok := body["max_tokens"]; ok {
		if count {
			return invalidRequest("/max_tokens", "a token count takes no max_tokens")
		}
		if _, err := anthPositiveInt(v, "max_tokens", true); err != nil {
			return err.(*TranslateError)
		}
	}
	if raw, ok := body["messages"]; ok {
		if err := checkTurns(raw); err != nil {
			return err
		}
	}
	if v, ok := body["model"]; ok {
		v = jsonscan.TrimSpace(v)
		if len(v) < 2 || v[0] != '"' || len(bytes.TrimSpace(jsonscan.StringContent(v))) == 0 {
			return invalidRequest("/model", "model must be a non-empty string")
		}
	}
	if v, ok := body["stream"]; ok {
		if s := string(jsonscan.TrimSpace(v)); s != "true" && s != "false" {
			return invalidRequest("/stream", "stream must be a boolean")
		}
	}
	if v, ok := body["thinking"]; ok && !anthIsNull(v) {
		var t msgTranslation
		if err := t.thinking(v); err != nil {
			return err.(*TranslateError)
		}
	}
	for _, k := range [...]string{"model", "max_tokens", "messages"} {
		if k == "max_tokens" && count {
			continue
		}
		if _, ok := body[k]; !ok {
			return invalidRequest("/"+k, "%s is required", k)
		}
	}
	return nil
}

// eachElement calls f with each element of a JSON array, in order, until f
// returns false; ok is false when arr is not an array it can walk.
func eachElement(arr []byte, f func(i int, elem []byte) bool) (n int, ok bool) {
	arr = jsonscan.TrimSpace(arr)
	if len(arr) < 2 || arr[0] != '[' {
		return 0, false
	}
	i := jsonscan.SkipSpace(arr, 1)
	if i < len(arr) && arr[i] == ']' {
		return 0, true
	}
	for {
		end := jsonscan.SkipValue(arr, i)
		if end <= i || end > len(arr) {
			return n, false
		}
		if !f(n, arr[i:end]) {
			return n + 1, true
		}
		n++
		i = jsonscan.SkipSpace(arr, end)
		switch {
		case i < len(arr) && arr[i] == ',':
			i = jsonscan.SkipSpace(arr, i+1)
		case i < len(arr) && arr[i] == ']':
			return n, true
		default:
			return n, false
		}
	}
}

// checkTurns is [CheckMessages]'s check of the turns, in the words of the
// full translation's (msgTranslation.messages). It scans; turns the scan
// finds at fault are read again by the translation itself, whose verdict is
// the one given, so that the two never differ where a scan and encoding/json
// read a body differently (a member written twice: the scan sees the first,
// encoding/json keeps the last; a member name in another case).
func checkTurns(v json.RawMessage) *TranslateError {
	if scanTurns(v) == nil {
		return nil
	}
	t := msgTranslation{d: fullDialect, out: Body{}}
	return asTranslateError(t.messages(v), "/messages")
}

// asTranslateError is a translation's error as a [TranslateError] (an
// invalid_request at param for any other error); nil for nil.
func asTranslateError(err error, param string) *TranslateError {
	if err == nil {
		return nil
	}
	var te *TranslateError
	if errors.As(err, &te) {
		return te
	}
	return invalidRequest(param, "%s", err.Error())
}

// scanTurns is checkTurns's scan.
func scanTurns(v json.RawMessage) *TranslateError {
	if !json.Valid(v) {
		return invalidRequest("/messages", "messages must be a non-empty array of message objects")
	}
	var bad *TranslateError
	said := false
	n, ok := eachElement(v, func(i int, m []byte) bool {
		if len(m) == 0 || m[0] != '{' {
			bad = invalidRequest("/messages/"+strconv.Itoa(i), "not a valid message object")
			return false
		}
		content := jsonscan.Member(m, "content")
		if len(content) == 0 || anthIsNull(content) {
			bad = invalidRequest("/messages/"+strconv.Itoa(i)+"/content", "a message needs its content")
			return false
		}
		if !said && !scannedEmptyContent(content) {
			said = true
		}
		role := jsonscan.Member(m, "role")
		switch string(jsonscan.StringContent(role)) {
		case "user", "assistant":
		case "":
			bad = invalidRequest("/messages/"+strconv.Itoa(i)+"/role", "a message needs a role")
			return false
		default:
			var r string
			_ = json.Unmarshal(role, &r)
			bad = invalidRequest("/messages/"+strconv.Itoa(i)+"/role", "unsupported role %q (user or assistant)", r)
			return false
		}
		return true
	})
	switch {
	case bad != nil:
		return bad
	case !ok || n == 0:
		return invalidRequest("/messages", "messages must be a non-empty array of message objects")
	case !said:
		return invalidRequest("/messages", "every turn of messages has empty content: at least one needs non-blank text or another content block")
	}
	return nil
}

// scannedEmptyContent is [emptyContent] by a scan: a blank string, no
// blocks, or only text blocks whose text is blank (escapes are read as
// written, so an escaped character counts as content).
func scannedEmptyContent(v []byte) bool {
	v = jsonscan.TrimSpace(v)
	if len(v) > 0 && v[0] == '"' {
		return len(bytes.TrimSpace(jsonscan.StringContent(v))) == 0
	}
	empty := true
	eachElement(v, func(_ int, b []byte) bool {
		if string(jsonscan.StringContent(jsonscan.Member(b, "type"))) != "text" ||
			len(bytes.TrimSpace(jsonscan.StringContent(jsonscan.Member(b, "text")))) > 0 {
			empty = false
			return false
		}
		return true
	})
	return empty
}
