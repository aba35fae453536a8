// Package errorbodies reads the error answers recorded from the upstream APIs'
// public documentation and from live answers quoted in public issue threads,
// one JSON file per answer under testdata/errors/<upstream>/<name>.json (see
// its README.md).
//
// The files are embedded, so the simulator and the failure classifier's
// tests replay exactly the bytes that were recorded.
package errorbodies

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	sluice "github.com/sluicegw/sluice"
)

var files = sluice.ErrorBodies()

// Recording is one recorded error answer.
type Recording struct {
	// Name is "<upstream>/<file name without .json>", e.g.
	// "openai/content_policy_violation"; it is filled by Load.
	Name string `json:"-"`
	// Status is the HTTP status the upstream answered with.
	Status int `json:"status"`
	// Headers are response headers worth replaying (lower-case names), if any.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the error body exactly as recorded, byte for byte.
	Body json.RawMessage `json:"body"`
	// Source is the URL of the page the body was taken from.
	Source string `json:"source"`
	// Class is the failure class sluice's classifier must return for it:
	// throttled, timeout, server_error, overflow, unauthorized, refusal or
	// client_error.
	Class string `json:"class"`
	// Categories are the refusal categories (the provider's error code and,
	// for Azure, each filtered category), or the provider's error code.
	Categories []string `json:"categories"`
	// Note says what was not in the source verbatim, if anything.
	Note string `json:"note,omitempty"`
}

// Classes lists the valid values of [Recording.Class].
var Classes = []string{"throttled", "timeout", "server_error", "overflow", "unauthorized", "refusal", "client_error"}

// FS returns the embedded recordings as a read-only file system.
func FS() fs.FS { return files }

// Load parses every embedded recording, keyed by [Recording.Name].
func Load() (map[string]Recording, error) {
	names, err := fs.Glob(files, "*/*.json")
	if err != nil {
		return nil, fmt.Errorf("errorbodies: list: %w", err)
	}
	out := make(map[string]Recording, len(names))
	for _, n := range names {
		raw, err := fs.ReadFile(files, n)
		if err != nil {
			return nil, fmt.Errorf("errorbodies: read %s: %w", n, err)
		}
		var rec Recording
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("errorbodies: parse %s: %w", n, err)
		}
		rec.Name = strings.TrimSuffix(n, path.Ext(n))
		out[rec.Name] = rec
	}
	return out, nil
}

// Names returns the sorted names of all recordings.
func Names(recs map[string]Recording) []string {
	names := make([]string, 0, len(recs))
	for n := range recs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
