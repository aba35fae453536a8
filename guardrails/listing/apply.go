package listing

import (
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// Applied is the outcome of [Apply].
type Applied struct {
	// Document is the merged catalog document.
	Document *guardrails.Document
	// Raw is its catalog.json bytes.
	Raw []byte
	// Catalog is the merged catalog, loaded.
	Catalog *guardrails.Catalog
	// Summary says what changed.
	Summary *Summary
}

// Apply merges an import into a catalog document (nil for none) and
// loads the result exactly as the gateway loads a catalog. On any problem
// it returns the diagnostics (located in a catalog named name) and nothing
// to write; the summary is returned either way.
func Apply(name string, base *guardrails.Document, imp *Import, opt MergeOptions) (*Applied, profiles.Diagnostics) {
	doc, sum := Merge(base, imp, opt)
	a := &Applied{Document: doc, Summary: sum}
	raw, err := EncodeDocument(doc)
	if err != nil {
		return a, profiles.Diagnostics{{File: name, Code: profiles.CodeJSONSyntax, Message: err.Error()}}
	}
	cat, diags := guardrails.ParseCatalog(name, raw)
	if len(diags) > 0 {
		return a, diags
	}
	a.Raw, a.Catalog = raw, cat
	return a, nil
}
