// Package failover decides what happens after an upstream attempt fails: it
// classifies the failure ([Classify], [ClassifyTransport],
// [ClassifyStreamError]), says whether the class may be retried
// ([Retryable]) and which restricted targets may take it over ([Covers]),
// and plans the ordered attempts of a routed request ([Planner], [Plan]).
//
// The package only decides; it never dials. The gateway asks a [Plan] for
// the first target, sends, classifies a failure, and asks the plan for the
// successor until an attempt answers or the plan says why the request ends.
package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Failure classes. The strings are stable: they appear in configuration
// (takes_over, then.on), in the request log's fallback_reason and in tests.
const (
	// ClassThrottled is a rate limit (429) or an overload answer such as
	// Anthropic's 529 overloaded_error.
	ClassThrottled = "throttled"
	// ClassTimeout is a dial, first-byte or total deadline, a 408 or a 504.
	ClassTimeout = "timeout"
	// ClassServerError is any other 5xx.
	ClassServerError = "server_error"
	// ClassConnection is a failure to get any response: refused, reset, or
	// EOF before the status line.
	ClassConnection = "connection"
	// ClassOverflow is a prompt larger than the model's context window,
	// answered by the upstream or found while planning.
	ClassOverflow = "overflow"
	// ClassUnauthorized is a 401 or a 403 that is not a refusal.
	ClassUnauthorized = "unauthorized"
	// ClassRefusal is a content refusal: a 451, or a 400/403/422 whose error
	// code or type is about content policy, content filtering, safety or
	// moderation (see [Classify]).
	ClassRefusal = "refusal"
	// ClassClientError is any other 4xx. It is final: the gateway forwards
	// it unchanged.
	ClassClientError = "client_error"
)

// Classes lists every failure class, in the order of the constants above.
var Classes = []string{
	ClassThrottled, ClassTimeout, ClassServerError, ClassConnection,
	ClassOverflow, ClassUnauthorized, ClassRefusal, ClassClientError,
}

// CategoryContextWindow is the category of the overflow [PlanningOverflow]
// returns: the planner, not the upstream, found the prompt too large.
const CategoryContextWindow = "context_window"

// Failure is one classified failed attempt.
type Failure struct {
	// Class is one of the Class* constants.
	Class string
	// Categories qualify the class. For a refusal: the provider's error code
	// and, for Azure OpenAI, every content filter category marked filtered,
	// and for OpenRouter's moderation its metadata.reasons. For other classes
	// the provider's error code when it sends a string one. May be empty.
	Categories []string
	// Filtered are the content filter categories a refusal's
	// content_filter_result marks filtered (Azure OpenAI's), in name
	// order: the part of Categories that says what was filtered, not
	// that a filter answered. Nil for any other failure.
	Filtered []string
	// Status is the upstream HTTP status, or 0 when there was none
	// (transport failures, planning, in-stream errors without a numeric code).
	Status int
	// RetryAfter is the delay the upstream asked for in a Retry-After header
	// given in seconds; 0 when absent or given as a date.
	RetryAfter time.Duration
}

// String returns the form recorded as the request log's fallback_reason:
// "refusal:<first filtered category>" for a refusal whose content filter
// result names categories (Azure's 400 content_filter answer records
// "refusal:hate", which says what was refused where its generic code
// would not), "refusal:<first category>" for any other refusal that has
// categories, otherwise the class ("throttled", "timeout", ...).
func (f Failure) String() string {
	if f.Class == ClassRefusal && len(f.Filtered) > 0 {
		return ClassRefusal + ":" + f.Filtered[0]
	}
	if f.Class == ClassRefusal && len(f.Categories) > 0 {
		return ClassRefusal + ":" + f.Categories[0]
	}
	return f.Class
}

// HasCategory reports whether the failure carries the category.
func (f Failure) HasCategory(c string) bool {
	for _, x := range f.Categories {
		if x == c {
			return true
		}
	}
	return false
}

// PlanningOverflow returns the failure of a target the planner removed
// because the prompt is larger than its model's context window. Its category
// is [CategoryContextWindow] and its Status 0.
func PlanningOverflow() Failure {
	return Failure{Class: ClassOverflow, Categories: []string{CategoryContextWindow}}
}

// Retryable reports whether a failure of this class may move the request to
// another ordinary target. throttled, timeout, server_error, connection and
// overflow may; unauthorized only when callerKey is true (the attempt used
// the caller's own provider key, which may have been rotated or narrowed,
// while another target uses a different key); refusal and client_error
// never do. A restricted target may still take over a non-retryable failure
// it names (see [Covers]).
func Retryable(f Failure, callerKey bool) bool {
	switch f.Class {
	case ClassThrottled, ClassTimeout, ClassServerError, ClassConnection, ClassOverflow:
		return true
	case ClassUnauthorized:
		return callerKey
	default:
		return false
	}
}

// Covers reports whether a takes_over (or then.on) list matches the failure.
// "refusal" matches every refusal; "refusal:<category>" only a refusal whose
// categories include that category; any other entry matches the class
// exactly.
func Covers(takesOver []string, f Failure) bool {
	for _, e := range takesOver {
		if cat, ok := strings.CutPrefix(e, ClassRefusal+":"); ok {
			if f.Class == ClassRefusal && f.HasCategory(cat) {
				return true
			}
			continue
		}
		if e == f.Class {
			return true
		}
	}
	return false
}

// Classify classifies an upstream answer with a non-2xx status from its
// status, headers and body. The body may be empty or not JSON; the status
// then decides alone. Statuses outside 400–599 (which only an upstream
// misbehaving sends as a failure) are server_error.
//
// Refusal: a 451; a 403 carrying OpenRouter's moderation metadata (reasons,
// flagged_input); or a 400, 403 or 422 whose error.code, error.type,
// metadata.error_type or innererror.code mentions content policy, content
// filter, safety or moderation, or that carries Azure OpenAI's
// content_filter_result. Overflow: a 400, 413 or 422 whose code says
// context_length, or whose message (or OpenRouter's metadata.raw) uses the
// upstreams' wording for a prompt over the context window. 529 and
// overload names in a 5xx are throttled.
//
// A 200 whose finish_reason is content_filter is an answer, not a failure:
// the gateway forwards it and never calls Classify for it, so a filtered
// completion is never taken over.
func Classify(status int, header http.Header, body []byte) Failure {
	e := parseErrorBody(body)
	f := Failure{Status: status, Class: classOf(status, &e)}
	f.Categories = categories(f.Class, &e)
	if f.Class == ClassRefusal {
		f.Filtered = e.filtered
	}
	if header != nil {
		f.RetryAfter = retryAfter(header.Get("Retry-After"))
	}
	return f
}

func classOf(status int, e *errorBody) string {
	switch {
	case status == http.StatusTooManyRequests || status == 529:
		return ClassThrottled
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return ClassTimeout
	case status == http.StatusUnavailableForLegalReasons:
		return ClassRefusal
	case status >= 500 && status <= 599:
		switch {
		case e.names(isOverloadName):
			return ClassThrottled
		case e.metaType == "timeout":
			return ClassTimeout
		}
		return ClassServerError
	case status == http.StatusUnauthorized:
		return ClassUnauthorized
	case status == http.StatusForbidden:
		if e.refusal() {
			return ClassRefusal
		}
		return ClassUnauthorized
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		if e.refusal() {
			return ClassRefusal
		}
		if e.overflow() {
			return ClassOverflow
		}
		return ClassClientError
	case status == http.StatusRequestEntityTooLarge:
		if e.overflow() {
			return ClassOverflow
		}
		return ClassClientError
	case status >= 400 && status <= 499:
		return ClassClientError
	default:
		return ClassServerError
	}
}

// categories builds a failure's categories. For a refusal: the name that
// called it one (the provider's error code, else its error type or
// error_type), then Azure's filtered categories in name order, then the
// moderation reasons. Otherwise the provider's own code, if any.
func categories(class string, e *errorBody) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		for _, x := range out {
			if x == s {
				return
			}
		}
		out = append(out, s)
	}
	if class != ClassRefusal {
		add(e.providerCode())
		return out
	}
	if c := e.providerCode(); c != "" {
		add(c)
	} else {
		for _, n := range []string{e.typ, e.metaType} {
			if isRefusalName(n) {
				add(n)
				break
			}
		}
	}
	for _, c := range e.filtered {
		add(c)
	}
	for _, r := range e.reasons {
		add(r)
	}
	return out
}

// errorBody is what the classifier reads from the error shapes of the
// upstreams sluice speaks to:
//
//	OpenAI, Azure: {"error": {"code": "...", "type": "...", "message": "...",
//	               "innererror": {"code": "...", "content_filter_result": {...}}}}
//	Anthropic:     {"type": "error", "error": {"type": "...", "message": "..."}}
//	OpenRouter:    {"error": {"code": 403, "message": "...",
//	               "metadata": {"error_type": "...", "reasons": [...], "raw": ...}}}
//	               or, for availability errors, {"error": {"message": "...",
//	               "error_type": "...", "http_status": 429, "availability": {...}}}
type errorBody struct {
	envelope  string // top-level "type" ("error" for Anthropic)
	code      string // error.code when a string
	hasCode   bool   // error.code present and not null
	typ       string // error.type
	message   string // error.message (or error, when it is a string)
	innerCode string // error.innererror.code
	metaType  string // error.metadata.error_type, else error.error_type
	raw       string // error.metadata.raw, as text
	filtered  []string
	reasons   []string
	cfr       bool // a content_filter_result is present
	flagged   bool // OpenRouter moderation metadata is present
}

type wireEnvelope struct {
	Type  json.RawMessage `json:"type"`
	Error json.RawMessage `json:"error"`
}

type wireError struct {
	Code       json.RawMessage `json:"code"`
	Type       json.RawMessage `json:"type"`
	Message    json.RawMessage `json:"message"`
	InnerError *struct {
		Code                json.RawMessage            `json:"code"`
		ContentFilterResult map[string]json.RawMessage `json:"content_filter_result"`
	} `json:"innererror"`
	ContentFilterResult map[string]json.RawMessage `json:"content_filter_result"`
	// ErrorType is OpenRouter's availability error type, which it puts in
	// the error itself as well as in its metadata.
	ErrorType json.RawMessage `json:"error_type"`
	Metadata  *struct {
		ErrorType    json.RawMessage `json:"error_type"`
		Reasons      json.RawMessage `json:"reasons"`
		FlaggedInput json.RawMessage `json:"flagged_input"`
		Raw          json.RawMessage `json:"raw"`
	} `json:"metadata"`
}

// parseErrorBody reads what it can; a malformed or unexpected body yields a
// partly or entirely empty errorBody, never an error.
func parseErrorBody(body []byte) errorBody {
	var e errorBody
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return e
	}
	var env wireEnvelope
	if json.Unmarshal(body, &env) != nil {
		return e
	}
	e.envelope = str(env.Type)
	if s, ok := strOK(env.Error); ok {
		e.message = s
		return e
	}
	var w wireError
	if json.Unmarshal(env.Error, &w) != nil {
		// Fields of unexpected types: fall back to the members one by one.
		w = wireError{}
		var loose map[string]json.RawMessage
		if json.Unmarshal(env.Error, &loose) != nil {
			return e
		}
		w.Code, w.Type, w.Message = loose["code"], loose["type"], loose["message"]
	}
	e.code, e.hasCode = strOK(w.Code)
	e.typ = str(w.Type)
	e.message = str(w.Message)
	cfr := w.ContentFilterResult
	if w.InnerError != nil {
		e.innerCode = str(w.InnerError.Code)
		if w.InnerError.ContentFilterResult != nil {
			cfr = w.InnerError.ContentFilterResult
		}
	}
	if cfr != nil {
		e.cfr = true
		for name, v := range cfr {
			var r struct {
				Filtered bool `json:"filtered"`
			}
			if json.Unmarshal(v, &r) == nil && r.Filtered {
				e.filtered = append(e.filtered, name)
			}
		}
		sort.Strings(e.filtered)
	}
	e.metaType = str(w.ErrorType)
	if m := w.Metadata; m != nil {
		if t := str(m.ErrorType); t != "" {
			e.metaType = t
		}
		var reasons []json.RawMessage
		if json.Unmarshal(m.Reasons, &reasons) == nil {
			for _, r := range reasons {
				if s := str(r); s != "" {
					e.reasons = append(e.reasons, s)
				}
			}
		}
		e.flagged = len(e.reasons) > 0 || (len(m.FlaggedInput) > 0 && string(m.FlaggedInput) != "null")
		if s, ok := strOK(m.Raw); ok {
			e.raw = s
		} else if len(m.Raw) > 0 {
			e.raw = string(m.Raw)
		}
	}
	return e
}

// providerCode is the provider's own name for the error: error.code when it
// is a string, else the error type of an Anthropic envelope (which has no
// code). OpenRouter's numeric codes repeat the status and are not names.
func (e *errorBody) providerCode() string {
	if e.code != "" {
		return e.code
	}
	if e.envelope == "error" && !e.hasCode {
		return e.typ
	}
	return ""
}

// names reports whether any of the error's machine-readable names satisfies pred.
func (e *errorBody) names(pred func(string) bool) bool {
	return pred(e.code) || pred(e.typ) || pred(e.metaType) || pred(e.innerCode)
}

func (e *errorBody) refusal() bool {
	return e.cfr || e.flagged || e.names(isRefusalName)
}

func (e *errorBody) overflow() bool {
	if e.names(isOverflowName) {
		return true
	}
	return isOverflowMessage(e.message) || isOverflowMessage(e.raw)
}

func isRefusalName(s string) bool {
	if s == "" {
		return false
	}
	s = strings.ToLower(s)
	for _, k := range []string{"content_policy", "contentpolicy", "content_filter", "contentfilter",
		"content_management", "safety", "moderation", "responsibleaipolicy"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return s == "refusal"
}

func isOverflowName(s string) bool {
	if s == "" {
		return false
	}
	s = strings.ToLower(s)
	return strings.Contains(s, "context_length") || strings.Contains(s, "context_window")
}

// isOverflowMessage matches the wording upstreams use when no code says it:
// Anthropic's "prompt is too long: N tokens > M maximum" and OpenRouter's
// "maximum context length is N tokens".
func isOverflowMessage(s string) bool {
	if s == "" {
		return false
	}
	s = strings.ToLower(s)
	for _, k := range []string{"maximum context length", "context length exceeded", "context_length_exceeded",
		"prompt is too long", "exceeds the context window", "context window exceeded"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func isOverloadName(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "overloaded") || s == "rate_limit_exceeded" || s == "rate_limit_error"
}

func str(raw json.RawMessage) string {
	s, _ := strOK(raw)
	return s
}

// strOK decodes a JSON string; ok is false for anything else (absent, null,
// a number, an object).
func strOK(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// ClassifyTransport classifies an attempt that got no response. An error for
// which errors.Is(err, context.DeadlineExceeded) holds, or anything in its
// chain implementing Timeout() bool that returns true (net.Error,
// os.ErrDeadlineExceeded, the gateway's own dial/first-byte/total deadline
// sentinels), is a timeout; everything else (refused, reset, EOF before a
// response, a nil error) is a connection failure.
//
// A request cancelled by its own caller also lands in connection; the
// gateway checks its request context before asking the plan for a successor.
func ClassifyTransport(err error) Failure {
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) {
		return Failure{Class: ClassTimeout}
	}
	return Failure{Class: ClassConnection}
}

// isTimeout walks the whole chain (including joined errors) because a
// wrapper may implement Timeout() bool and answer false for a cause that
// answers true.
func isTimeout(err error) bool {
	for depth := 0; err != nil && depth < 64; depth++ {
		if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if isTimeout(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// ClassifyStreamError classifies an error reported inside a stream after its
// 200 status: errType is the error object's type (Anthropic's error event,
// e.g. "overloaded_error") and code its code as text (OpenRouter's error
// chunk carries a numeric status such as "502", or a name such as
// "context_length_exceeded"). Either may be empty. A numeric code is
// classified like that HTTP status, refined by the names; with neither an
// in-stream error is a server_error.
//
// Once output has reached the caller the gateway does not fail over; the
// class is still what the request log and upstream health record.
func ClassifyStreamError(errType string, code string) Failure {
	e := errorBody{typ: errType, envelope: "error"}
	status := 0
	if n, err := strconv.Atoi(strings.TrimSpace(code)); err == nil {
		status = n
	} else if code != "" {
		e.code, e.hasCode = code, true
	}
	class := ""
	if status != 0 {
		class = classOf(status, &e)
	} else {
		class = classOfNames(&e)
	}
	return Failure{Class: class, Status: status, Categories: categories(class, &e)}
}

// classOfNames classifies from the error names alone (no status).
func classOfNames(e *errorBody) string {
	switch {
	case e.names(isRefusalName):
		return ClassRefusal
	case e.names(isOverflowName):
		return ClassOverflow
	case e.names(isOverloadName) || e.names(func(s string) bool { return strings.Contains(strings.ToLower(s), "rate_limit") }):
		return ClassThrottled
	case e.names(func(s string) bool { return strings.Contains(strings.ToLower(s), "timeout") }):
		return ClassTimeout
	case e.names(func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "authentication") || strings.Contains(s, "permission") || strings.Contains(s, "api_key")
	}):
		return ClassUnauthorized
	case e.names(func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "invalid_request") || strings.Contains(s, "not_found") || strings.Contains(s, "too_large")
	}):
		return ClassClientError
	default:
		return ClassServerError
	}
}
