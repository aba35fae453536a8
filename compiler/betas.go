package compiler

import (
	"fmt"
	"strings"
)

// CodeBetaUnsupported: the request asks, in its anthropic-beta header, for a
// beta the upstream does not take, and losing it would change the answer
// (a larger context window, a tool the model would call, a file it would
// read). The refusal's Param is [BetaParam].
const CodeBetaUnsupported = "beta_unsupported"

// BetaParam locates a beta refusal: the request header at fault.
const BetaParam = "anthropic-beta"

// DegradedBetaPrefix starts the degraded entry of a beta flag the upstream
// does not take and the request went on without ("beta:<flag>").
const DegradedBetaPrefix = "beta:"

// What a beta flag asks for, in [KnownBetas].
const (
	// BetaEconomy: a saving (cache lifetime, fewer tokens, older context
	// cleared); without it the same answer costs more.
	BetaEconomy = "economy"
	// BetaRefinement: a refinement of how the answer is produced or
	// streamed (finer tool streaming, thinking between tool calls); without
	// it the answer is still an answer to the same request.
	BetaRefinement = "refinement"
	// BetaAnswer: a capability the answer depends on (a larger context, a
	// server tool, a file, an MCP server); without it the request would be
	// answered as another request.
	BetaAnswer = "answer"
)

// KnownBeta is what a known anthropic-beta flag asks for, and the document
// that says so.
type KnownBeta struct {
	// Asks is [BetaEconomy], [BetaRefinement] or [BetaAnswer].
	Asks string
	// Source is Anthropic's documentation of the beta.
	Source string
}

// KnownBetas are the anthropic-beta flags whose loss the check weighs: a
// flag an upstream does not take is dropped, and the request degraded, when
// it asks for an economy or a refinement, and refused when losing it would
// change the answer. A flag not listed here is treated as a refinement
// (dropped and recorded): a caller's new or private flag never blocks a
// request, and the degraded entry names it.
var KnownBetas = map[string]KnownBeta{
	// Economies.
	"prompt-caching-2024-07-31":        {BetaEconomy, "https://docs.claude.com/en/docs/build-with-claude/prompt-caching"},
	"extended-cache-ttl-2025-04-11":    {BetaEconomy, "https://docs.claude.com/en/docs/build-with-claude/prompt-caching#1-hour-cache-duration"},
	"token-efficient-tools-2025-02-19": {BetaEconomy, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/token-efficient-tool-use"},
	"context-management-2025-06-27":    {BetaEconomy, "https://docs.claude.com/en/docs/build-with-claude/context-editing"},
	// Refinements.
	"fine-grained-tool-streaming-2025-05-14": {BetaRefinement, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/fine-grained-tool-streaming"},
	"interleaved-thinking-2025-05-14":        {BetaRefinement, "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#interleaved-thinking"},
	"claude-code-20250219":                   {BetaRefinement, "https://docs.claude.com/en/api/beta-headers"},
	"token-counting-2024-11-01":              {BetaRefinement, "https://docs.claude.com/en/docs/build-with-claude/token-counting"},
	// What the answer depends on.
	"context-1m-2025-08-07":         {BetaAnswer, "https://docs.claude.com/en/docs/build-with-claude/context-windows#1m-token-context-window"},
	"output-128k-2025-02-19":        {BetaAnswer, "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"},
	"computer-use-2024-10-22":       {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/computer-use-tool"},
	"computer-use-2025-01-24":       {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/computer-use-tool"},
	"code-execution-2025-05-22":     {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/code-execution-tool"},
	"code-execution-2025-08-25":     {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/code-execution-tool"},
	"files-api-2025-04-14":          {BetaAnswer, "https://docs.claude.com/en/docs/build-with-claude/files"},
	"mcp-client-2025-04-04":         {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/mcp-connector"},
	"web-fetch-2025-09-10":          {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/tool-use/web-fetch-tool"},
	"pdfs-2024-09-25":               {BetaAnswer, "https://docs.claude.com/en/docs/build-with-claude/pdf-support"},
	"skills-2025-10-02":             {BetaAnswer, "https://docs.claude.com/en/docs/agents-and-tools/agent-skills/overview"},
	"structured-outputs-2025-11-13": {BetaAnswer, "https://docs.claude.com/en/docs/build-with-claude/structured-outputs"},
}

// BetaAsks returns what a beta flag asks for: its [KnownBetas] entry's, or
// [BetaRefinement] for a flag not listed.
func BetaAsks(flag string) string {
	if k, ok := KnownBetas[strings.ToLower(flag)]; ok {
		return k.Asks
	}
	return BetaRefinement
}

// checkBetas keeps the request's beta flags the upstream takes, degrading
// the request by each other flag that asks for an economy or a refinement
// and refusing it for one whose loss changes the answer. accepted is the
// upstream's [Capabilities.Betas]; nil takes every flag.
func checkBetas(flags []string, accepted map[string]string, upstream string, degraded *[]string) ([]string, *Refusal) {
	if accepted == nil || len(flags) == 0 {
		return flags, nil
	}
	var kept []string
	for i, f := range flags {
		if _, ok := accepted[f]; ok {
			if kept != nil {
				kept = append(kept, f)
			}
			continue
		}
		if BetaAsks(f) == BetaAnswer {
			return nil, &Refusal{Code: CodeBetaUnsupported, Param: BetaParam, Message: fmt.Sprintf(
				"the request asks for beta %q (anthropic-beta), which upstream %q does not take; without it the request would be answered as another one (%s)", f, upstream, KnownBetas[f].Source)}
		}
		if kept == nil {
			kept = append(make([]string, 0, len(flags)), flags[:i]...)
		}
		*degraded = append(*degraded, DegradedBetaPrefix+f)
	}
	if kept == nil {
		return flags, nil
	}
	return kept, nil
}

// CheckBetas is the check's decision on a request's anthropic-beta flags
// alone, for an upstream that accepts the flags in accepted (nil: all):
// the flags to send, what the request is degraded by (beta:<flag> each),
// or the refusal. A connector's translation tests use it to stand in for
// the whole check.
func CheckBetas(flags []string, accepted map[string]string, upstream string) (kept, degraded []string, refused *Refusal) {
	kept, refused = checkBetas(flags, accepted, upstream, &degraded)
	return kept, degraded, refused
}

// SplitBetas returns the flags of anthropic-beta header values, each of which
// may list several comma-separated: the values themselves when none does.
func SplitBetas(values []string) []string {
	split := false
	for _, v := range values {
		if strings.ContainsRune(v, ',') || strings.TrimSpace(v) != v {
			split = true
			break
		}
	}
	if !split {
		return values
	}
	var out []string
	for _, v := range values {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
	}
	return out
}
