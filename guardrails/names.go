package guardrails

import (
	"maps"
	"slices"
	"strings"
)

// Connector kinds, as the catalog's name maps key them: the vocabulary each
// kind of upstream speaks.
const (
	ConnectorOpenRouter = "openrouter"
	ConnectorVercel     = "vercel"
	ConnectorOpenAI     = "openai"
	ConnectorAnthropic  = "anthropic"
)

// ProviderNames spells one provider (a catalog provider slug) in each
// upstream's vocabulary.
type ProviderNames struct {
	// Send maps a connector kind to the name sent for the provider in that
	// upstream's provider lists (order, only, ignore). Default: the catalog's
	// provider slug, or the built-in spelling for a well-known provider.
	Send map[string]string `json:"send,omitempty"`
	// Reported maps a connector kind to the names that upstream reports for
	// the provider when it says who served. Default: the built-in names for
	// a well-known provider; names compare case- and punctuation-insensitively
	// and the slug itself always matches.
	Reported map[string][]string `json:"reported,omitempty"`
}

// builtinProviders spells the well-known providers of each marketplace, so
// that a catalog without a "providers" section reads their reports and sends
// their names right. OpenRouter reports display names ("Amazon Bedrock") and
// takes slugs; the Vercel AI Gateway takes and reports its own slugs
// ("bedrock", "vertex"; where its slug is the catalog's, nothing needs
// spelling). A catalog's own entry replaces a built-in one per connector.
var builtinProviders = map[string]ProviderNames{
	"ai21":              orName("AI21"),
	"aion-labs":         orName("AionLabs"),
	"akashml":           orName("AkashML"),
	"alibaba":           orName("Alibaba"),
	"amazon-bedrock":    orName("Amazon Bedrock").with("vercel", "bedrock"),
	"amazon-nova":       orName("Amazon Nova"),
	"ambient":           orName("Ambient"),
	"anthropic":         orName("Anthropic").with("vercel", "anthropic"),
	"arcee-ai":          orName("Arcee AI"),
	"atlas-cloud":       orName("AtlasCloud"),
	"avian":             orName("Avian"),
	"azure":             orName("Azure").with("vercel", "azure"),
	"baidu":             orName("Baidu"),
	"baseten":           orName("BaseTen"),
	"black-forest-labs": orName("Black Forest Labs"),
	"byteplus":          orName("BytePlus"),
	"cerebras":          orName("Cerebras"),
	"chutes":            orName("Chutes"),
	"cirrascale":        orName("Cirrascale"),
	"clarifai":          orName("Clarifai"),
	"cloudflare":        orName("Cloudflare"),
	"cohere":            orName("Cohere"),
	"coreweave":         orName("CoreWeave"),
	"crusoe":            orName("Crusoe"),
	"databricks":        orName("Databricks"),
	"deepinfra":         orName("DeepInfra").with("vercel", "deepinfra"),
	"deepseek":          orName("DeepSeek"),
	"digitalocean":      orName("DigitalOcean"),
	"featherless":       orName("Featherless"),
	"fireworks":         orName("Fireworks"),
	"friendli":          orName("Friendli"),
	"gmicloud":          orName("GMICloud"),
	"google-ai-studio":  orName("Google AI Studio").with("vercel", "google"),
	"google-vertex":     orName("Google").with("vercel", "vertex", "vertexAnthropic"),
	"groq":              orName("Groq"),
	"inception":         orName("Inception"),
	"inceptron":         orName("Inceptron"),
	"inference-net":     orName("InferenceNet"),
	"infermatic":        orName("Infermatic"),
	"inflection":        orName("Inflection"),
	"io-net":            orName("Io Net"),
	"liquid":            orName("Liquid"),
	"mancer":            orName("Mancer 2"),
	"meta":              orName("Meta"),
	"minimax":           orName("Minimax"),
	"mistral":           orName("Mistral"),
	"modelrun":          orName("ModelRun"),
	"moonshotai":        orName("Moonshot AI"),
	"morph":             orName("Morph"),
	"nebius":            orName("Nebius"),
	"novita":            orName("Novita"),
	"nvidia":            orName("Nvidia"),
	"openai":            orName("OpenAI").with("vercel", "openai"),
	"parasail":          orName("Parasail"),
	"perplexity":        orName("Perplexity"),
	"phala":             orName("Phala"),
	"poolside":          orName("Poolside"),
	"reka":              orName("Reka"),
	"sambanova":         orName("SambaNova"),
	"siliconflow":       orName("SiliconFlow"),
	"stepfun":           orName("StepFun"),
	"together":          orName("Together"),
	"upstage":           orName("Upstage"),
	"venice":            orName("Venice"),
	"xai":               orName("xAI"),
	"z-ai":              orName("Z.AI"),
}

// orName is a provider OpenRouter reports by a display name and takes by its
// slug.
func orName(display string) ProviderNames {
	return ProviderNames{Reported: map[string][]string{ConnectorOpenRouter: {display}}}
}

// with adds a connector that takes the provider by send and reports it by
// send and the other names.
func (p ProviderNames) with(connector, send string, reported ...string) ProviderNames {
	if p.Send == nil {
		p.Send = map[string]string{}
	}
	p.Send[connector] = send
	p.Reported[connector] = append([]string{send}, reported...)
	return p
}

// NameKey is the form names compare in: lower-case letters and digits only
// ("Amazon Bedrock", "amazon-bedrock" and "AMAZON_BEDROCK" are one name).
func NameKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c >= 0x80:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// names is a catalog's name maps, built once when the catalog loads.
type names struct {
	providers map[string]ProviderNames // the catalog's own section, by slug
	// reported maps a connector kind, then a name key, to a provider slug.
	reported map[string]map[string]string
	// models maps an id key (see idKey) to a model slug: slugs and aliases
	// under "", upstream ids under the connector kind, and native ids under
	// "native:" + the direct provider.
	models map[string]map[string]string
}

// buildNames indexes the catalog's models and provider section with the
// built-in provider spellings.
func buildNames(models []*Model, providers map[string]ProviderNames, slugs []string) *names {
	n := &names{providers: providers, reported: map[string]map[string]string{}, models: map[string]map[string]string{}}
	addReported := func(connector, name, slug string) {
		m := n.reported[connector]
		if m == nil {
			m = map[string]string{}
			n.reported[connector] = m
		}
		if _, taken := m[NameKey(name)]; !taken {
			m[NameKey(name)] = slug
		}
	}
	// A catalog's own names first, so they win over the built-in ones.
	for _, slug := range slices.Sorted(maps.Keys(providers)) {
		for connector, list := range providers[slug].Reported {
			for _, name := range list {
				addReported(connector, name, slug)
			}
		}
	}
	for _, slug := range slices.Sorted(maps.Keys(builtinProviders)) {
		for connector, list := range builtinProviders[slug].Reported {
			if _, own := providers[slug].Reported[connector]; own {
				continue
			}
			for _, name := range list {
				addReported(connector, name, slug)
			}
		}
	}
	for _, slug := range slugs {
		addReported("", slug, slug)
	}
	addModel := func(scope, id, slug string) {
		m := n.models[scope]
		if m == nil {
			m = map[string]string{}
			n.models[scope] = m
		}
		if _, taken := m[strings.ToLower(id)]; !taken {
			m[strings.ToLower(id)] = slug
		}
	}
	for _, m := range models {
		addModel("", m.Slug, m.Slug)
	}
	for _, m := range models {
		for _, a := range m.Aliases {
			addModel("", a, m.Slug)
		}
		for connector, id := range m.UpstreamIDs {
			addModel(connector, id, m.Slug)
		}
		for provider, id := range m.Native {
			addModel("native:"+provider, id, m.Slug)
			// A cloud's id pins a version after an "@" (Vertex AI's
			// claude-sonnet-4-5@20250929), and the answer reports the
			// model by its own dated id: the name before it is the model.
			if name, _, ok := strings.Cut(id, "@"); ok && name != "" {
				addModel("native:"+provider, name, m.Slug)
			}
		}
	}
	// A direct provider that serves a model without a native id of its own
	// knows it by the slug's name (the check sends exactly that).
	for _, m := range models {
		_, name, _ := strings.Cut(m.Slug, "/")
		for _, e := range m.Endpoints {
			if _, own := m.Native[e.Provider]; !own {
				addModel("native:"+e.Provider, name, m.Slug)
			}
		}
	}
	return n
}

// SendName returns how the connector's upstream spells a provider entry of
// a plan ("provider" or "provider/tag") in its provider lists: the
// catalog's send name, else the built-in one, else the entry as it is. A tag
// is kept after the spelled base ("deepinfra/fp8").
func (c *Catalog) SendName(connector, entry string) string {
	base, tag, tagged := strings.Cut(entry, "/")
	name := base
	if s, ok := c.names.providers[base].Send[connector]; ok {
		name = s
	} else if s, ok := builtinProviders[base].Send[connector]; ok {
		name = s
	}
	switch {
	case name == base:
		return entry // spelled as the catalog spells it, tag and all
	case tagged:
		return name + "/" + tag
	}
	return name
}

// ReportedProvider returns the catalog provider slug of a name the
// connector's upstream reported as the provider that served ("Amazon
// Bedrock" from OpenRouter, "bedrock" from the Vercel AI Gateway), or false
// when no provider matches it. Names compare case- and
// punctuation-insensitively; a reported "provider/tag" keeps its tag.
func (c *Catalog) ReportedProvider(connector, reported string) (string, bool) {
	if reported == "" {
		return "", false
	}
	base, tag, tagged := strings.Cut(reported, "/")
	k := NameKey(base)
	slug, ok := c.names.reported[connector][k]
	if !ok {
		slug, ok = c.names.reported[""][k]
	}
	if !ok {
		return "", false
	}
	if tagged {
		return slug + "/" + strings.ToLower(tag), true
	}
	return slug, true
}

// ReportedName returns the name the connector's upstream gives a catalog
// provider when it reports who served (OpenRouter's "Amazon Bedrock", the
// Vercel AI Gateway's "bedrock"): the first of the catalog's reported names
// for that connector, else of the built-in ones, else the provider slug
// itself. A name that would read back ([Catalog.ReportedProvider]) as
// another provider is passed over, so the name of a catalog provider
// always reads back as it. An entry "provider/tag" is named by its provider: the
// marketplaces report who served, not which of its endpoints.
func (c *Catalog) ReportedName(connector, provider string) string {
	base, _, _ := strings.Cut(strings.ToLower(provider), "/")
	list, own := c.names.providers[base].Reported[connector]
	if !own {
		list = builtinProviders[base].Reported[connector]
	}
	for _, name := range list {
		if slug, ok := c.ReportedProvider(connector, name); ok && slug == base {
			return name
		}
	}
	return base
}

// UpstreamID returns the id sent to the connector's kind of upstream for a
// model: its upstream id there, else its slug.
func (c *Catalog) UpstreamID(connector, slug string) string {
	if m, ok := c.Model(slug); ok {
		if id, ok := m.UpstreamIDs[connector]; ok {
			return id
		}
		return m.Slug
	}
	return slug
}

// ReportedModel returns the catalog slug of a model id an upstream reported
// as the one that served, or false when it names no catalog model. The
// reported id is the model when it equals, ignoring case, the model's slug,
// one of its aliases, its upstream id for this connector, or — on a direct
// upstream, whose provider is directProvider — its native id there; each
// with or without a trailing date or version suffix (-2024-08-06,
// -20260317, -0613).
func (c *Catalog) ReportedModel(connector, directProvider, reported string) (string, bool) {
	id := strings.ToLower(strings.TrimSpace(reported))
	if id == "" {
		return "", false
	}
	for _, candidate := range [2]string{id, TrimVersion(id)} {
		if candidate == "" {
			continue
		}
		if slug, ok := c.names.models[""][candidate]; ok {
			return slug, true
		}
		if slug, ok := c.names.models[connector][candidate]; ok {
			return slug, true
		}
		if directProvider != "" {
			if slug, ok := c.names.models["native:"+directProvider][candidate]; ok {
				return slug, true
			}
		}
	}
	return "", false
}

// TrimVersion strips one trailing date or version suffix from a model id:
// -YYYY-MM-DD, -YYYYMMDD, or -MMDD (a month and day), the forms upstreams
// add to name a snapshot of a model; "" when the id has none.
func TrimVersion(id string) string {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return ""
	}
	tail := id[i+1:]
	switch {
	case len(tail) == 8 && digits(tail) && validMonthDay(tail[4:]):
		return id[:i]
	case len(tail) == 4 && digits(tail) && validMonthDay(tail):
		return id[:i]
	case len(tail) == 2 && digits(tail): // the "-DD" of -YYYY-MM-DD
		if len(id) >= 11 && id[len(id)-11] == '-' && id[len(id)-6] == '-' &&
			digits(id[len(id)-10:len(id)-6]) && digits(id[len(id)-5:len(id)-3]) &&
			validMonthDay(id[len(id)-5:len(id)-3]+tail) {
			return id[:len(id)-11]
		}
	}
	return ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// validMonthDay reports whether four digits are a month (01-12) and a day
// (01-31).
func validMonthDay(mmdd string) bool {
	m := int(mmdd[0]-'0')*10 + int(mmdd[1]-'0')
	d := int(mmdd[2]-'0')*10 + int(mmdd[3]-'0')
	return m >= 1 && m <= 12 && d >= 1 && d <= 31
}

// builtinReported maps a connector kind, then a name key, to the provider
// slug the built-in spellings give that name; built once.
var builtinReported = func() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, slug := range slices.Sorted(maps.Keys(builtinProviders)) {
		for connector, list := range builtinProviders[slug].Reported {
			if out[connector] == nil {
				out[connector] = map[string]string{}
			}
			for _, name := range list {
				if _, taken := out[connector][NameKey(name)]; !taken {
					out[connector][NameKey(name)] = slug
				}
			}
		}
	}
	return out
}()

// BuiltinProviderSlug returns the catalog provider slug that the built-in
// spellings give a name the connector's upstream reports ("Amazon Bedrock"
// from OpenRouter, "bedrock" from the Vercel AI Gateway), compared case-
// and punctuation-insensitively, or false when no built-in provider has it.
func BuiltinProviderSlug(connector, name string) (string, bool) {
	slug, ok := builtinReported[connector][NameKey(name)]
	return slug, ok
}

// BuiltinReportedNames returns the names the built-in spellings say the
// connector's upstream reports for a catalog provider slug (OpenRouter's
// display name, say), or nil when there is no built-in spelling.
func BuiltinReportedNames(connector, slug string) []string {
	return append([]string(nil), builtinProviders[slug].Reported[connector]...)
}

// BuiltinSendName returns the name the built-in spellings send to the
// connector's upstream for a catalog provider slug, or false when it sends
// the slug itself.
func BuiltinSendName(connector, slug string) (string, bool) {
	s, ok := builtinProviders[slug].Send[connector]
	return s, ok
}
