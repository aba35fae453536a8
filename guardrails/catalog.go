package guardrails

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/schemas"
)

// CatalogFile is the name of the catalog inside a configuration directory.
const CatalogFile = "catalog.json"

// Stable diagnostic codes reported by [LoadCatalog], in addition to
// [profiles.CodeJSONSyntax], [profiles.CodeSchema] and [profiles.CodeReadError].
const (
	// CodeDuplicateModel: a model slug appears twice (case-insensitively).
	CodeDuplicateModel = "duplicate_model"
	// CodeDuplicateEndpoint: one model lists the same provider/tag endpoint twice.
	CodeDuplicateEndpoint = "duplicate_endpoint"
	// CodeEmptyCatalog: the catalog has no models; sluice never serves with one.
	CodeEmptyCatalog = "empty_catalog"
	// CodeDuplicateAlias: a model's alias or upstream id is another model's
	// slug, alias or upstream id for the same upstream, so a report of it
	// could name either.
	CodeDuplicateAlias = "duplicate_alias"
)

// Catalog is a loaded, validated model catalog. It is immutable and safe for
// concurrent use.
type Catalog struct {
	models    []*Model // sorted by slug
	index     map[string]int
	providers []string // sorted distinct base provider slugs
	tagged    []string // sorted distinct provider/tag endpoint slugs
	spelled   map[string]ProviderNames
	names     *names
	revision  string
}

// Model is one catalog entry. Treat it as read-only.
type Model struct {
	// Slug is the lower-cased model slug, author/name[:variant].
	Slug string `json:"slug"`
	// ContextWindow is the context window in tokens.
	ContextWindow int `json:"context_window"`
	// Native maps a direct provider's slug to its own id for this model.
	// Default: empty (no direct provider knows it under another name).
	Native map[string]string `json:"native,omitempty"`
	// CallerKeyOnly, when true, means only a caller's own upstream key may serve
	// the model, never the platform key. Default: false.
	CallerKeyOnly bool `json:"caller_key_only,omitempty"`
	// Class is a free-form class such as "paid" or "free". Default: "".
	Class string `json:"class,omitempty"`
	// Kind is what the model does: "chat" (it completes conversations, on
	// the chat-completions and Messages APIs) or "embedding" (it embeds
	// input, on the embeddings API). Default: "" (chat). A request to an
	// API of the other kind is refused, naming the model.
	Kind string `json:"kind,omitempty"`
	// Aliases are other ids an upstream may report for the model, such as a
	// marketplace's canonical slug ("anthropic/claude-4.5-haiku" for
	// anthropic/claude-haiku-4.5); lower-cased. Default: none.
	Aliases []string `json:"aliases,omitempty"`
	// UpstreamIDs maps a connector kind to the id sent to that kind of
	// upstream when it differs from the slug ({"vercel":
	// "meta/llama-3.1-70b"}); a report of it is recognised too. Default:
	// none (the slug is sent).
	UpstreamIDs map[string]string `json:"upstream_ids,omitempty"`
	// Endpoints are the provider endpoints serving the model, in file order.
	Endpoints []Endpoint `json:"endpoints"`

	idx int
}

// Endpoint is one provider's way of serving a model.
type Endpoint struct {
	// Provider is the lower-cased base provider slug.
	Provider string `json:"provider"`
	// Tag names a serving variant (e.g. "fp8"), lower-cased. Default: "" (the
	// provider's default endpoint).
	Tag string `json:"tag,omitempty"`
	// PriceIn is USD per million input tokens.
	PriceIn float64 `json:"price_in"`
	// PriceOut is USD per million output tokens.
	PriceOut float64 `json:"price_out"`
	// LatencyMS is the typical time to first token. Default: 0 (unknown).
	LatencyMS int `json:"latency_ms,omitempty"`
	// ThroughputTPS is the typical output tokens per second. Default: 0 (unknown).
	ThroughputTPS float64 `json:"throughput_tps,omitempty"`
	// Class overrides the model's class for this endpoint. Default: "" (the model's).
	Class string `json:"class,omitempty"`
	// PriceCacheRead is USD per million prompt tokens read from the
	// provider's prompt cache. Default: unset, and cached tokens are priced
	// at PriceIn (no discount is assumed).
	PriceCacheRead *float64 `json:"price_cache_read,omitempty"`
	// PriceCacheWrite is USD per million prompt tokens written to the
	// provider's prompt cache (cache creation). Default: unset, and such
	// tokens are priced at PriceIn.
	PriceCacheWrite *float64 `json:"price_cache_write,omitempty"`
	// PriceAudioIn and PriceAudioOut are USD per million audio input and
	// output tokens (a realtime model's). Default: unset, and audio tokens
	// are priced at PriceIn and PriceOut; a realtime model's endpoint
	// without them is a catalog warning (realtime_unpriced).
	PriceAudioIn  *float64 `json:"price_audio_in,omitempty"`
	PriceAudioOut *float64 `json:"price_audio_out,omitempty"`
	// PriceAudioCacheRead is USD per million cached audio input tokens.
	// Default: unset, and they are priced at the audio input price.
	PriceAudioCacheRead *float64 `json:"price_audio_cache_read,omitempty"`
	// PriceImageIn is USD per million image input tokens. Default: unset,
	// and they are priced at PriceIn.
	PriceImageIn *float64 `json:"price_image_in,omitempty"`
	// PriceImageCacheRead is USD per million cached image input tokens.
	// Default: unset, and they are priced at the image input price.
	PriceImageCacheRead *float64 `json:"price_image_cache_read,omitempty"`
	// ZeroRetention is whether the endpoint keeps no prompt or completion
	// once it has answered: true, false, or nil (unknown, which no data
	// policy counts as compliant). Default: unknown.
	ZeroRetention *bool `json:"zero_retention,omitempty"`
	// NoTraining is whether the endpoint neither trains on nor collects
	// prompts: true, false, or nil (unknown, never counted as compliant).
	// Default: unknown.
	NoTraining *bool `json:"no_training,omitempty"`
	// Quantization is the numeric precision the endpoint serves at
	// ("fp8", "bf16", ...), lower-cased. Default: "" (unknown, which no
	// quantizations list admits).
	Quantization string `json:"quantization,omitempty"`
	// Regions are the geographies ([profiles.Geographies]) the endpoint may
	// process a request in, all of them: a data policy's regions admit it
	// only when each is among theirs. No listing publishes it, so an import
	// never changes it. Default: none (unknown, which no regions list
	// admits).
	Regions []string `json:"regions,omitempty"`
	// Pinned names the data facts ("zero_retention", "no_training",
	// "quantization") written here by hand: an import never changes them,
	// even where its listing says otherwise. Default: none (an import
	// updates each fact its listing publishes; a fact it does not publish
	// keeps its value).
	Pinned []string `json:"pinned,omitempty"`
	// Source says where the endpoint came from: "openrouter" or "vercel"
	// (imported from that marketplace's listing: a re-import of it updates
	// the endpoint's prices and measurements and removes it once it is no
	// longer listed), "manual" (hand-written and pinned: no import changes
	// or removes it), or "" (hand-written; an import that lists the same
	// endpoint takes it over). Default "".
	Source string `json:"source,omitempty"`
}

// Endpoint sources, the values of [Endpoint.Source].
const (
	// SourceManual pins a hand-written endpoint: imports never touch it.
	SourceManual = "manual"
	// SourceOpenRouter marks an endpoint imported from OpenRouter's listing.
	SourceOpenRouter = ConnectorOpenRouter
	// SourceVercel marks an endpoint imported from the Vercel AI Gateway's listing.
	SourceVercel = ConnectorVercel
)

// CacheReadPrice returns the USD per million cached prompt tokens read:
// PriceCacheRead when set, else PriceIn.
func (e *Endpoint) CacheReadPrice() float64 {
	if e.PriceCacheRead != nil {
		return *e.PriceCacheRead
	}
	return e.PriceIn
}

// CacheWritePrice returns the USD per million prompt tokens written to the
// cache: PriceCacheWrite when set, else PriceIn.
func (e *Endpoint) CacheWritePrice() float64 {
	if e.PriceCacheWrite != nil {
		return *e.PriceCacheWrite
	}
	return e.PriceIn
}

// Model kinds, as [Model.Kind] spells them.
const (
	KindChat      = "chat"
	KindEmbedding = "embedding"
	// KindRealtime is a model served over the Realtime API's WebSocket
	// sessions (GET /v1/realtime) alone.
	KindRealtime = "realtime"
)

// Realtime reports whether the model is a realtime model.
func (m *Model) Realtime() bool { return m.Kind == KindRealtime }

// CodeRealtimeUnpriced is the warning of a realtime model's endpoint with no
// audio price: its sessions' audio would be priced at the text prices.
const CodeRealtimeUnpriced = "realtime_unpriced"

// Warnings returns what the catalog serves with but a reviewer should fix,
// each located by JSON pointer: a realtime model's endpoint without an
// output price or audio prices (realtime_unpriced).
func (c *Catalog) Warnings() profiles.Diagnostics {
	var out profiles.Diagnostics
	for _, m := range c.models {
		if !m.Realtime() {
			continue
		}
		for j, e := range m.Endpoints {
			if e.PriceOut > 0 && e.PriceAudioIn != nil && e.PriceAudioOut != nil {
				continue
			}
			out = append(out, profiles.Diagnostic{File: CatalogFile, Pointer: fmt.Sprintf("/models/%d/endpoints/%d", m.idx, j),
				Code: CodeRealtimeUnpriced, Message: fmt.Sprintf("realtime model %q on %q has no price_out, price_audio_in and price_audio_out: its sessions' audio would be priced at the text prices, or at $0", m.Slug, e.Slug())})
		}
	}
	return out
}

// Embedding reports whether the model is an embedding model.
func (m *Model) Embedding() bool { return m.Kind == KindEmbedding }

// Slug returns the endpoint slug: "provider" or "provider/tag".
func (e Endpoint) Slug() string {
	if e.Tag == "" {
		return e.Provider
	}
	return e.Provider + "/" + e.Tag
}

// Document is catalog.json as written: the shape [ParseCatalog] reads, for
// tools that build or edit a catalog (an import merges a marketplace's
// listing into one). It is plain data, not validated.
type Document struct {
	// Schema is the editor hint "$schema". Default "".
	Schema string `json:"$schema,omitempty"`
	// Providers spells providers in each upstream's names. Default none.
	Providers map[string]ProviderNames `json:"providers,omitempty"`
	// Models are the catalog's models, in file order.
	Models []*Model `json:"models"`
}

// LoadCatalog reads and validates DIR/catalog.json. On failure it returns a nil
// catalog and every problem found, located: JSON syntax errors by line and
// column, schema errors by JSON pointer, duplicate models by line.
func LoadCatalog(dir string) (*Catalog, profiles.Diagnostics) {
	return loadCatalogFile(filepath.Join(dir, CatalogFile), CatalogFile)
}

// LoadCatalogFile is [LoadCatalog] for a catalog at an arbitrary path, such as
// one written by [Catalog.SaveLastGood]. Diagnostics name the file by its base name.
func LoadCatalogFile(path string) (*Catalog, profiles.Diagnostics) {
	return loadCatalogFile(path, filepath.Base(path))
}

func loadCatalogFile(path, name string) (*Catalog, profiles.Diagnostics) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, profiles.Diagnostics{{File: name, Code: profiles.CodeReadError, Message: err.Error()}}
	}
	return ParseCatalog(name, raw)
}

// ParseCatalog validates catalog content; name is used in diagnostics.
func ParseCatalog(name string, raw []byte) (*Catalog, profiles.Diagnostics) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, profiles.Diagnostics{jsonDiag(name, raw, err)}
	}
	if vs := schemas.Validate(schemas.Catalog, doc); len(vs) > 0 {
		ds := make(profiles.Diagnostics, 0, len(vs))
		for _, v := range vs {
			ds = append(ds, profiles.Diagnostic{File: name, Pointer: v.Pointer, Code: profiles.CodeSchema, Message: v.Message})
		}
		ds.Sort()
		return nil, ds
	}
	var cd Document
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cd); err != nil {
		// The schema accepted the document, so this is a mismatch between the
		// schema and the Go types: still report it, located.
		return nil, profiles.Diagnostics{jsonDiag(name, raw, err)}
	}
	if len(cd.Models) == 0 {
		return nil, profiles.Diagnostics{{File: name, Pointer: "/models", Code: CodeEmptyCatalog,
			Message: "the catalog has no models; refusing to serve with an empty catalog"}}
	}
	lines := modelLines(raw)
	var ds profiles.Diagnostics
	c := &Catalog{index: make(map[string]int, len(cd.Models))}
	firstLine := make(map[string]int, len(cd.Models))
	provSet := map[string]struct{}{}
	tagSet := map[string]struct{}{}
	for i, m := range cd.Models {
		m.Slug = strings.ToLower(m.Slug)
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if prev, dup := firstLine[m.Slug]; dup {
			ds = append(ds, profiles.Diagnostic{File: name, Line: line, Code: CodeDuplicateModel,
				Message: fmt.Sprintf("model %q is already defined at line %d", m.Slug, prev)})
			continue
		}
		firstLine[m.Slug] = line
		if len(m.Native) > 0 {
			n := make(map[string]string, len(m.Native))
			for k, v := range m.Native {
				n[strings.ToLower(k)] = v
			}
			m.Native = n
		}
		for j, a := range m.Aliases {
			m.Aliases[j] = strings.ToLower(a)
		}
		seen := make(map[string]int, len(m.Endpoints))
		for j := range m.Endpoints {
			e := &m.Endpoints[j]
			e.Provider = strings.ToLower(e.Provider)
			e.Tag = strings.ToLower(e.Tag)
			s := e.Slug()
			if prev, dup := seen[s]; dup {
				ds = append(ds, profiles.Diagnostic{File: name, Pointer: schemas.Pointer("models", fmt.Sprint(i), "endpoints", fmt.Sprint(j)),
					Code: CodeDuplicateEndpoint, Message: fmt.Sprintf("model %q lists endpoint %q twice (first at index %d)", m.Slug, s, prev)})
				continue
			}
			seen[s] = j
			provSet[e.Provider] = struct{}{}
			if e.Tag != "" {
				tagSet[s] = struct{}{}
			}
		}
		c.models = append(c.models, m)
	}
	if len(ds) > 0 {
		ds.Sort()
		return nil, ds
	}
	sort.Slice(c.models, func(i, j int) bool { return c.models[i].Slug < c.models[j].Slug })
	for i, m := range c.models {
		m.idx = i
		c.index[m.Slug] = i
	}
	c.providers = sortedKeys(provSet)
	c.tagged = sortedKeys(tagSet)
	if len(cd.Providers) > 0 {
		c.spelled = make(map[string]ProviderNames, len(cd.Providers))
		for k, v := range cd.Providers {
			c.spelled[strings.ToLower(k)] = v
		}
	}
	if ds := aliasProblems(name, cd.Models); len(ds) > 0 {
		ds.Sort()
		return nil, ds
	}
	c.names = buildNames(c.models, c.spelled, c.providers)
	canon, err := json.Marshal(Document{Providers: c.spelled, Models: c.models})
	if err != nil { // cannot happen: plain data
		return nil, profiles.Diagnostics{{File: name, Code: profiles.CodeJSONSyntax, Message: err.Error()}}
	}
	sum := sha256.Sum256(canon)
	c.revision = hex.EncodeToString(sum[:])
	return c, nil
}

// aliasProblems finds ids that would name two models: an alias equal to
// another model's slug or alias, or an upstream id equal to another model's
// slug, alias or upstream id for the same upstream. models are in file
// order, so that each problem is located by its JSON pointer.
func aliasProblems(name string, models []*Model) profiles.Diagnostics {
	var ds profiles.Diagnostics
	owner := map[string]string{} // scope + "\x00" + id → slug; scope "" holds slugs and aliases
	for _, m := range models {
		owner["\x00"+m.Slug] = m.Slug
	}
	taken := func(m *Model, k string) (string, bool) {
		prev, ok := owner[k]
		return prev, ok && prev != m.Slug
	}
	for i, m := range models {
		for j, a := range m.Aliases {
			if prev, dup := taken(m, "\x00"+a); dup {
				ds = append(ds, profiles.Diagnostic{File: name, Pointer: schemas.Pointer("models", fmt.Sprint(i), "aliases", fmt.Sprint(j)),
					Code: CodeDuplicateAlias, Message: fmt.Sprintf("model %q: alias %q already names model %q", m.Slug, a, prev)})
				continue
			}
			owner["\x00"+a] = m.Slug
		}
	}
	for i, m := range models {
		for _, c := range slices.Sorted(maps.Keys(m.UpstreamIDs)) {
			id := strings.ToLower(m.UpstreamIDs[c])
			prev, dup := taken(m, "\x00"+id)
			if !dup {
				prev, dup = taken(m, c+"\x00"+id)
			}
			if dup {
				ds = append(ds, profiles.Diagnostic{File: name, Pointer: schemas.Pointer("models", fmt.Sprint(i), "upstream_ids", c),
					Code: CodeDuplicateAlias, Message: fmt.Sprintf("model %q: %s upstream id %q already names model %q", m.Slug, c, id, prev)})
				continue
			}
			owner[c+"\x00"+id] = m.Slug
		}
	}
	return ds
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// jsonDiag locates a decoding error by line and column.
func jsonDiag(name string, raw []byte, err error) profiles.Diagnostic {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(raw))
	}
	d := profiles.Diagnostic{File: name, Code: profiles.CodeJSONSyntax, Message: err.Error()}
	if off >= 0 {
		d.Line, d.Col = lineCol(raw, off)
	}
	return d
}

// lineCol converts a byte offset into a 1-based line and column. encoding/json
// reports the offset just past the offending byte, so the column points at it.
func lineCol(raw []byte, off int64) (int, int) {
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	line, col := 1, 1
	for _, b := range raw[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	if col > 1 {
		col--
	}
	return line, col
}

// modelLines returns the line on which each element of the top-level "models"
// array starts. It is only called on a document that decoded successfully.
func modelLines(raw []byte) []int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var lines []int
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return lines
		}
		if key != "models" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return lines
			}
			continue
		}
		if _, err := dec.Token(); err != nil {
			return lines
		}
		for dec.More() {
			off := dec.InputOffset()
			for off < int64(len(raw)) && strings.IndexByte(" \t\r\n,", raw[off]) >= 0 {
				off++
			}
			l, _ := lineCol(raw, off)
			lines = append(lines, l)
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return lines
			}
		}
		if _, err := dec.Token(); err != nil {
			return lines
		}
	}
	return lines
}

// Revision returns the hex SHA-256 of the catalog's canonical content (models
// sorted by slug, slugs lower-cased), so formatting changes do not change it.
func (c *Catalog) Revision() string { return c.revision }

// Model looks a model up by slug, case-insensitively.
func (c *Catalog) Model(slug string) (*Model, bool) {
	i, ok := c.index[strings.ToLower(slug)]
	if !ok {
		return nil, false
	}
	return c.models[i], true
}

// Models returns every model, sorted by slug. The slice is shared: do not modify it.
func (c *Catalog) Models() []*Model { return c.models }

// Providers returns the sorted distinct base provider slugs of all endpoints.
func (c *Catalog) Providers() []string { return append([]string(nil), c.providers...) }

// Len returns the number of models.
func (c *Catalog) Len() int { return len(c.models) }

// SaveLastGood writes the catalog's canonical content to path atomically
// (temporary file and rename), so that a later start can fall back to it with
// [LoadCatalogFile] when catalog.json is broken.
func (c *Catalog) SaveLastGood(path string) error {
	b, err := json.MarshalIndent(Document{Providers: c.spelled, Models: c.models}, "", "  ")
	if err != nil {
		return fmt.Errorf("guardrails: encoding last good catalog: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("guardrails: saving last good catalog: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("guardrails: saving last good catalog: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("guardrails: saving last good catalog: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("guardrails: saving last good catalog: %w", err)
	}
	return nil
}

// Document returns a copy of the catalog's canonical content (models
// sorted by slug, names lower-cased) as a document an import can merge
// into.
func (c *Catalog) Document() *Document {
	b, err := json.Marshal(Document{Providers: c.spelled, Models: c.models})
	if err != nil { // plain data: cannot happen
		panic(fmt.Sprintf("guardrails: encoding the catalog: %v", err))
	}
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		panic(fmt.Sprintf("guardrails: decoding the catalog: %v", err))
	}
	return &d
}
