package simulator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultAction is what a [Fault] does to the attempt it matches.
type FaultAction string

// The fault actions. FaultNone (the zero value) only applies the fault's Delay.
const (
	FaultNone               FaultAction = ""
	FaultStatus             FaultAction = "status"               // fail the attempt with Fault.Status
	FaultError              FaultAction = "error"                // fail with the recorded body Fault.ErrorName
	FaultHang               FaultAction = "hang"                 // never answer until the client goes away
	FaultHeadersThenNothing FaultAction = "headers_then_nothing" // send 200 headers, then stall
	FaultCutAfter           FaultAction = "cut_after"            // cut the connection after Fault.N chunks
	FaultStreamErrorAfter   FaultAction = "stream_error_after"   // in-band error after Fault.N chunks
	FaultGarbage            FaultAction = "garbage"              // 200 with invalid JSON
	FaultHugeError          FaultAction = "huge_error"           // ~10 MB error body (status Fault.Status, default 500)
	FaultSlowStream         FaultAction = "slow_stream"          // endless slow answer until the client goes away
	FaultFiltered           FaultAction = "filtered"             // 200 whose chat completion finishes with content_filter (non-stream)
)

// maxFaultDelay bounds delay= so a typo cannot park a test for hours.
const maxFaultDelay = 10 * time.Minute

// Fault is one injected failure. The header X-Sim-Fault and [Server.SetFaults]
// share it; [ParseFault] reads the header grammar and [Fault.String] writes it.
//
// A fault matches an upstream attempt when Provider (if set) matches the
// attempted endpoint the way OpenRouter provider slugs do (base slug or exact
// "provider/tag", case-insensitive) and Model (if set) equals the attempted
// model slug or its name part, case-insensitive.
type Fault struct {
	// Action is what happens to a matching attempt.
	Action FaultAction
	// Status is the HTTP status for FaultStatus (required) and FaultHugeError
	// (optional, default 500).
	Status int
	// ErrorName names a recording for FaultError, e.g. "openai/content_policy_violation".
	ErrorName string
	// N is the chunk count for FaultCutAfter and FaultStreamErrorAfter.
	N int
	// Delay is waited before the response headers (on top of any action).
	Delay time.Duration
	// Provider restricts the fault to attempts on that provider; empty matches all.
	Provider string
	// Model restricts the fault to attempts of that model; empty matches all.
	Model string
	// Times applies the fault to the first Times matching attempts seen by the
	// simulator only (counted per fault until [Server.Reset]); 0 means always.
	Times int
}

// ErrFaultSyntax is wrapped by every error [ParseFault] and [ParseFaults] return.
var ErrFaultSyntax = errors.New("invalid fault")

var flagActions = map[string]FaultAction{
	"hang":                 FaultHang,
	"headers_then_nothing": FaultHeadersThenNothing,
	"garbage":              FaultGarbage,
	"huge_error":           FaultHugeError,
	"slow_stream":          FaultSlowStream,
	"filtered":             FaultFiltered,
}

// ParseFaults parses a comma-separated list of faults (the X-Sim-Fault value).
func ParseFaults(s string) ([]Fault, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty fault list", ErrFaultSyntax)
	}
	parts := strings.Split(s, ",")
	out := make([]Fault, 0, len(parts))
	for i, p := range parts {
		f, err := ParseFault(p)
		if err != nil {
			if len(parts) > 1 {
				return nil, fmt.Errorf("fault %d: %w", i+1, err)
			}
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// ParseFault parses one fault: items separated by ";", each either
// key=value (status, error, provider, model, delay, cut_after,
// stream_error_after, times) or a flag (hang, headers_then_nothing, garbage,
// huge_error, slow_stream, filtered). At most one action; status may accompany
// huge_error; a fault needs an action or a delay.
func ParseFault(s string) (Fault, error) {
	var f Fault
	if strings.TrimSpace(s) == "" {
		return f, fmt.Errorf("%w: empty fault", ErrFaultSyntax)
	}
	seen := map[string]bool{}
	setAction := func(a FaultAction) error {
		if f.Action != FaultNone && !(f.Action == FaultStatus && a == FaultHugeError) && !(f.Action == FaultHugeError && a == FaultStatus) {
			return fmt.Errorf("%w: %q: more than one action (%s and %s)", ErrFaultSyntax, s, f.Action, a)
		}
		if a == FaultHugeError || f.Action == FaultHugeError {
			f.Action = FaultHugeError
			return nil
		}
		f.Action = a
		return nil
	}
	for _, item := range strings.Split(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			return f, fmt.Errorf("%w: %q: empty item", ErrFaultSyntax, s)
		}
		key, val, hasVal := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if seen[key] {
			return f, fmt.Errorf("%w: %q: %s given twice", ErrFaultSyntax, s, key)
		}
		seen[key] = true
		if a, ok := flagActions[key]; ok {
			if hasVal {
				return f, fmt.Errorf("%w: %q: %s takes no value", ErrFaultSyntax, s, key)
			}
			if err := setAction(a); err != nil {
				return f, err
			}
			continue
		}
		if !hasVal {
			return f, fmt.Errorf("%w: %q: unknown flag %q", ErrFaultSyntax, s, key)
		}
		if val == "" {
			return f, fmt.Errorf("%w: %q: %s needs a value", ErrFaultSyntax, s, key)
		}
		switch key {
		case "status":
			n, err := strconv.Atoi(val)
			if err != nil || n < 100 || n > 599 {
				return f, fmt.Errorf("%w: %q: status must be an HTTP status 100-599, got %q", ErrFaultSyntax, s, val)
			}
			f.Status = n
			if err := setAction(FaultStatus); err != nil {
				return f, err
			}
		case "error":
			up, name, ok := strings.Cut(val, "/")
			if !ok || up == "" || name == "" || strings.ContainsAny(val, " \t") || strings.Count(val, "/") != 1 {
				return f, fmt.Errorf("%w: %q: error must name a recording as <upstream>/<name>, got %q", ErrFaultSyntax, s, val)
			}
			f.ErrorName = val
			if err := setAction(FaultError); err != nil {
				return f, err
			}
		case "provider":
			f.Provider = val
		case "model":
			f.Model = val
		case "delay":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 || d > maxFaultDelay {
				return f, fmt.Errorf("%w: %q: delay must be a duration between 0 and %s, got %q", ErrFaultSyntax, s, maxFaultDelay, val)
			}
			f.Delay = d
		case "cut_after", "stream_error_after":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > 1_000_000 {
				return f, fmt.Errorf("%w: %q: %s must be a chunk count >= 0, got %q", ErrFaultSyntax, s, key, val)
			}
			f.N = n
			if err := setAction(FaultAction(key)); err != nil {
				return f, err
			}
		case "times":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > 1_000_000 {
				return f, fmt.Errorf("%w: %q: times must be a count >= 1, got %q", ErrFaultSyntax, s, val)
			}
			f.Times = n
		default:
			return f, fmt.Errorf("%w: %q: unknown key %q", ErrFaultSyntax, s, key)
		}
	}
	if f.Action == FaultNone && f.Delay == 0 && !seen["delay"] {
		return f, fmt.Errorf("%w: %q: no action (status, error, delay, hang, headers_then_nothing, cut_after, stream_error_after, garbage, huge_error, slow_stream, filtered)", ErrFaultSyntax, s)
	}
	return f, nil
}

// Validate reports whether f is well formed (what ParseFault would accept).
func (f Fault) Validate() error {
	_, err := ParseFault(f.String())
	if err != nil {
		return err
	}
	switch f.Action {
	case FaultNone, FaultStatus, FaultError, FaultHang, FaultHeadersThenNothing, FaultCutAfter,
		FaultStreamErrorAfter, FaultGarbage, FaultHugeError, FaultSlowStream, FaultFiltered:
	default:
		return fmt.Errorf("%w: unknown action %q", ErrFaultSyntax, f.Action)
	}
	return nil
}

// String renders f in the X-Sim-Fault grammar; ParseFault(f.String()) == f
// for every fault ParseFault returns.
func (f Fault) String() string {
	var items []string
	switch f.Action {
	case FaultStatus:
		items = append(items, "status="+strconv.Itoa(f.Status))
	case FaultError:
		items = append(items, "error="+f.ErrorName)
	case FaultCutAfter, FaultStreamErrorAfter:
		items = append(items, string(f.Action)+"="+strconv.Itoa(f.N))
	case FaultHugeError:
		items = append(items, string(f.Action))
		if f.Status != 0 {
			items = append(items, "status="+strconv.Itoa(f.Status))
		}
	case FaultNone:
	default:
		items = append(items, string(f.Action))
	}
	if f.Delay != 0 || f.Action == FaultNone {
		items = append(items, "delay="+f.Delay.String())
	}
	if f.Provider != "" {
		items = append(items, "provider="+f.Provider)
	}
	if f.Model != "" {
		items = append(items, "model="+f.Model)
	}
	if f.Times != 0 {
		items = append(items, "times="+strconv.Itoa(f.Times))
	}
	return strings.Join(items, ";")
}

// failsAttempt reports whether the action makes the attempt fail with an
// error answer (so a marketplace walks on to its next candidate).
func (f Fault) failsAttempt() bool {
	return f.Action == FaultStatus || f.Action == FaultError || f.Action == FaultHugeError
}

// matches reports whether f applies to an attempt of model on endpoint slug.
func (f Fault) matches(model, endpointSlug string) bool {
	if f.Provider != "" && !providerMatches(f.Provider, endpointSlug) {
		return false
	}
	if f.Model != "" && !modelMatches(f.Model, model) {
		return false
	}
	return true
}

// modelMatches compares a fault's model against a catalog slug: the full
// slug or its name part, case-insensitive.
func modelMatches(want, slug string) bool {
	want = strings.ToLower(want)
	slug = strings.ToLower(slug)
	if want == slug {
		return true
	}
	_, name, _ := strings.Cut(slug, "/")
	return want == name
}
