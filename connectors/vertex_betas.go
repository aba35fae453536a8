package connectors

// VertexBetas are the anthropic-beta flags Vertex AI's Anthropic models
// accept on rawPredict and streamRawPredict, each with the source that says
// so. A flag outside the table is not sent (Vertex AI answers an unknown
// flag with 400 "Unexpected value(s) ... for the anthropic-beta header":
// anthropics/claude-code#12429, #21625, #34802; vercel/ai#10981;
// pydantic/pydantic-ai#2512) and the request records it as degraded
// (beta:<flag>). The count-tokens endpoint takes none: a count is sent
// without the header (BerriAI/litellm#39597 recorded Vertex refusing
// tool-search-tool-2025-10-19 and web-search-2025-03-05 there while
// streamRawPredict took them).
var VertexBetas = map[string]string{
	"compact-2026-01-12":                   vertexBetasLiteLLM,
	"compact-2026-09-04":                   vertexBetasLiteLLM,
	"computer-use-2025-01-24":              vertexBetasLiteLLM,
	"computer-use-2025-11-24":              vertexBetasLiteLLM,
	"context-1m-2025-08-07":                vertexBetasLiteLLM,
	"context-management-2025-06-27":        vertexBetasLiteLLM,
	"dangerous-tool-use-2026-09-03":        vertexBetasLiteLLM,
	"effort-2025-11-24":                    "BerriAI/litellm#39597 (streamRawPredict answered 200 with the flag; claude-code#34802 reported it refused before)",
	"interleaved-thinking-2025-05-14":      vertexBetasLiteLLM,
	"per-turn-control-2026-07-01":          vertexBetasLiteLLM,
	"thinking-binding-controls-2026-08-01": vertexBetasLiteLLM,
	"thinking-display-updates-2026-08-18":  vertexBetasLiteLLM,
	"tool-search-tool-2025-10-19":          vertexBetasLiteLLM + "; BerriAI/litellm#39597 (streamRawPredict answered 200 with the flag)",
	"web-search-2025-03-05":                vertexBetasLiteLLM + "; BerriAI/litellm#39597 (streamRawPredict answered 200 with the flag)",
}

// vertexBetasLiteLLM is the source most entries share: LiteLLM's table of
// the flags each Anthropic host takes, its vertex_ai section.
const vertexBetasLiteLLM = "BerriAI/litellm litellm/anthropic_beta_headers_config.json (vertex_ai)"
