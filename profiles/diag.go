package profiles

import (
	"fmt"
	"sort"
	"strings"
)

// Diagnostic is one located configuration error. It carries a stable Code that
// tests and scripts match on, and a location a user can jump to: a line (and
// optionally a column) for TOML and Rego syntax and cross-reference errors, or a
// JSON pointer for schema errors.
type Diagnostic struct {
	// File is the path of the offending file, relative to the config directory.
	File string `json:"file"`
	// Line is the 1-based line, or 0 when the error is located by Pointer or not at all.
	Line int `json:"line,omitempty"`
	// Col is the 1-based column, or 0 when unknown.
	Col int `json:"col,omitempty"`
	// Pointer is a JSON pointer into the file's decoded document (schema errors).
	Pointer string `json:"pointer,omitempty"`
	// Code is the stable error code, e.g. "toml_syntax" or "duplicate_key_id".
	Code string `json:"code"`
	// Message is the human-readable explanation.
	Message string `json:"message"`
}

// Location renders where the diagnostic points: FILE:LINE#POINTER (a schema
// error in a TOML file, located both ways), FILE:LINE[:COL], FILE#POINTER or
// FILE.
func (d Diagnostic) Location() string {
	switch {
	case d.Line > 0 && (d.Pointer != "" || d.Code == CodeSchema):
		return fmt.Sprintf("%s:%d#%s", d.File, d.Line, d.Pointer)
	case d.Pointer != "" || (d.Line == 0 && d.Code == CodeSchema):
		return d.File + "#" + d.Pointer
	case d.Line > 0 && d.Col > 0:
		return fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Col)
	case d.Line > 0:
		return fmt.Sprintf("%s:%d", d.File, d.Line)
	default:
		return d.File
	}
}

// String renders the diagnostic as one line: "LOCATION: CODE: message".
func (d Diagnostic) String() string {
	return d.Location() + ": " + d.Code + ": " + d.Message
}

// Error implements error.
func (d Diagnostic) Error() string { return d.String() }

// Diagnostics is a list of diagnostics. It implements error so that a loader can
// return every problem at once.
type Diagnostics []Diagnostic

// Sort orders the diagnostics by file, line, column, pointer, code and message,
// so that output is stable.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		if a.Pointer != b.Pointer {
			return a.Pointer < b.Pointer
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
}

// Error implements error: every diagnostic on its own line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns nil for an empty list and the (sorted) list otherwise.
func (ds Diagnostics) Err() error {
	if len(ds) == 0 {
		return nil
	}
	ds.Sort()
	return ds
}

// Stable diagnostic codes reported by the configuration loader.
const (
	CodeTOMLSyntax           = "toml_syntax"
	CodeJSONSyntax           = "json_syntax"
	CodeSchema               = "schema"
	CodeReadError            = "read_error"
	CodeDuplicateKeyID       = "duplicate_key_id"
	CodeDuplicateKeyHash     = "duplicate_key_hash"
	CodeDuplicateUpstream    = "duplicate_upstream"
	CodeDuplicateRoute       = "duplicate_route"
	CodeDuplicateTeam        = "duplicate_team"
	CodeDuplicateTarget      = "duplicate_target_id"
	CodeUnknownUpstream      = "unknown_upstream"
	CodeFallbacksTooLong     = "fallbacks_too_long"
	CodeBothAllowedDenied    = "provider_both_allowed_and_denied"
	CodeDuplicateEntry       = "duplicate_entry"
	CodeUnknownRung          = "unknown_rung"
	CodeUnknownKey           = "unknown_key"
	CodeAllTargetsRestricted = "all_targets_restricted"
	CodeThenNotOnPool        = "then_requires_fastest"
	CodeForbiddenClass       = "forbidden_class"
	CodeInvalidProxy         = "invalid_trusted_proxy"
	CodeMissingSetting       = "missing_setting"
	// CodeMissingEnv: a setting names an environment variable (a password's)
	// that is not set, or is empty.
	CodeMissingEnv = "missing_env"
	// CodeInvalidCAFile: a CA file cannot be read or holds no certificate.
	CodeInvalidCAFile = "invalid_ca_file"
	// CodeCatalogRefresh: [catalog] asks for a refresh sluice will not do (more
	// often than once a minute, or through an upstream of another connector).
	CodeCatalogRefresh = "invalid_catalog_refresh"
	// CodeInvalidSessionHeader: [sessions] headers holds a name that is no
	// HTTP token, or one name twice (regardless of case).
	CodeInvalidSessionHeader = "invalid_session_header"
	// CodeMarketplaceAgreement: an [[upstreams]] entry of a marketplace
	// connector declares a data agreement (zero_retention, no_training),
	// which only a direct upstream's account can have.
	CodeMarketplaceAgreement = "agreement_on_marketplace"
	// CodeUpstreamConfig: an [[upstreams]] entry its connector cannot be
	// built from (a cloud's credentials that cannot be loaded, a region or
	// project it needs and lacks).
	CodeUpstreamConfig = "invalid_upstream"
)
