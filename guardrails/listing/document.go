package listing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicegw/sluice/guardrails"
)

// ReadDocument reads a catalog document as written, without validating it
// (the merge keeps what it does not understand to the catalog's own
// check). A file that does not exist is (nil, nil): an import then starts
// from an empty catalog.
func ReadDocument(path string) (*guardrails.Document, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeDocument(raw)
}

// DecodeDocument decodes catalog content as written.
func DecodeDocument(raw []byte) (*guardrails.Document, error) {
	var d guardrails.Document
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	return &d, nil
}

// EncodeDocument renders a catalog document as catalog.json is written:
// two-space indented, one trailing newline.
func EncodeDocument(d *guardrails.Document) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteFileAtomic writes data to path through a temporary file in the
// same directory and a rename, so a reader (the gateway's watcher, a
// concurrent `sluice check`) sees the old content or the new, never half.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		_ = os.Chmod(tmp.Name(), fi.Mode().Perm())
	} else {
		_ = os.Chmod(tmp.Name(), 0o644)
	}
	return os.Rename(tmp.Name(), path)
}

// SaveImport writes an import as JSON, atomically.
func SaveImport(path string, imp *Import) error {
	b, err := json.Marshal(imp)
	if err != nil {
		return fmt.Errorf("listing: encoding the import: %w", err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// LoadImport reads an import [SaveImport] wrote; (nil, nil) when there is
// none.
func LoadImport(path string) (*Import, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var imp Import
	if err := json.Unmarshal(raw, &imp); err != nil {
		return nil, fmt.Errorf("listing: %s: %w", path, err)
	}
	if imp.Source != SourceOpenRouter && imp.Source != SourceVercel {
		return nil, fmt.Errorf("listing: %s: unknown source %q", path, imp.Source)
	}
	return &imp, nil
}

// maxListed bounds each list a summary prints unless verbose.
const maxListed = 50

// Write prints the summary for a person: counts, then the models and
// endpoints added and removed, the price changes and the upstream ids
// set, then the notes (each list at most 50 lines unless verbose).
func (s *Summary) Write(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "%s: %d models listed, %d imported\n", s.Source, s.Listed, s.Imported)
	fmt.Fprintf(w, "models: %d added, %d removed; endpoints: %d added, %d removed; %d price changes; %d upstream ids set\n",
		len(s.ModelsAdded), len(s.ModelsRemoved), len(s.EndpointsAdded), len(s.EndpointsRemoved), len(s.PriceChanges), len(s.UpstreamIDs))
	if len(s.FactChanges) > 0 {
		fmt.Fprintf(w, "data facts: %d changed\n", len(s.FactChanges))
	}
	list := func(prefix string, items []string) {
		for i, it := range items {
			if i == maxListed && !verbose {
				fmt.Fprintf(w, "  … and %d more (--verbose lists them)\n", len(items)-i)
				return
			}
			fmt.Fprintf(w, "  %s %s\n", prefix, it)
		}
	}
	list("+ model", s.ModelsAdded)
	list("- model", s.ModelsRemoved)
	list("+ endpoint", s.EndpointsAdded)
	list("- endpoint", s.EndpointsRemoved)
	prices := make([]string, len(s.PriceChanges))
	for i, p := range s.PriceChanges {
		prices[i] = fmt.Sprintf("%s %s %s: %g → %g (%+.0f%%)", p.Model, p.Endpoint, p.Field, p.Old, p.New, signed(p)*100)
	}
	list("~ price", prices)
	list("= upstream id", s.UpstreamIDs)
	facts := make([]string, len(s.FactChanges))
	for i, f := range s.FactChanges {
		facts[i] = fmt.Sprintf("%s %s %s: %s → %s", f.Model, f.Endpoint, f.Field, f.Old, f.New)
	}
	list("~ fact", facts)
	notes := make([]string, len(s.Notes))
	for i, n := range s.Notes {
		what := n.Model
		if n.Endpoint != "" {
			what += " " + n.Endpoint
		}
		notes[i] = what + ": " + n.Reason
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "%d notes (skipped or kept as written):\n", len(notes))
		list("·", notes)
	}
	fmt.Fprintf(w, "catalog: %d models, %d endpoints\n", s.Models, s.Endpoints)
}

func signed(p PriceChange) float64 {
	r := p.Relative()
	if p.New < p.Old {
		return -r
	}
	return r
}
