package listing

import (
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// Apply merges an import into a catalog document (nil for none) and
// checks the result exactly as the gateway loads a catalog. It returns the
// merged document, its catalog.json bytes and the summary; on any problem
// the diagnostics (located in a catalog named name) and nothing to write.
func Apply(name string, base *guardrails.Document, imp *Import, opt MergeOptions) (*guardrails.Document, []byte, *Summary, profiles.Diagnostics) {
	doc, sum := Merge(base, imp, opt)
	raw, err := EncodeDocument(doc)
	if err != nil {
		return nil, nil, sum, profiles.Diagnostics{{File: name, Code: profiles.CodeJSONSyntax, Message: err.Error()}}
	}
	if _, diags := guardrails.ParseCatalog(name, raw); len(diags) > 0 {
		return nil, nil, sum, diags
	}
	return doc, raw, sum, nil
}
