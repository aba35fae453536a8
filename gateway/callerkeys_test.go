package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

const callerSecret = "sk-caller-own-openai-key-77"

// batchKey rewrites the k-batch key (upstream openai) with extra settings.
func batchKey(settings string) [2]string {
	return [2]string{"project = \"batch\"\nupstream = \"openai\"\n", "project = \"batch\"\nupstream = \"openai\"\n" + settings}
}

// TestCallerKeysAndSafetyNet: a key may carry the caller's own provider
// key; its 401/403 are retryable; with the safety net an eligible account is
// answered on the platform key (metered), otherwise the caller's error is
// preserved; a caller-key-only model never runs on platform keys.
func TestCallerKeysAndSafetyNet(t *testing.T) {
	t.Setenv("BATCH_OPENAI_KEY", callerSecret)
	byok := "[keys.byok]\nopenai_env = \"BATCH_OPENAI_KEY\"\n"
	onlyCallers := func(dir string) { // gpt-4o-mini may run on callers' own keys only
		p := filepath.Join(dir, "catalog.json")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		s := strings.Replace(string(b), `{"slug": "openai/gpt-4o-mini",`, `{"slug": "openai/gpt-4o-mini", "caller_key_only": true,`, 1)
		require.NotEqual(t, string(b), s)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	platform := "Bearer " + platformKeys["OPENAI_API_KEY"]
	tests := []struct {
		name     string
		settings string
		model    string
		fault    string
		status   int
		code     string
		auths    []string // credentials of the upstream requests, in order
		switched string
		reason   string
		fallback bool
		repeat   int // send the request this many times (all must pass)
	}{
		{name: "caller key used", settings: byok, model: "openai/gpt-4o", status: 200,
			auths: []string{"Bearer " + callerSecret}},
		{name: "caller-key traffic is not metered: a tiny budget never refuses it", settings: "monthly_budget_usd = 0.0000001\n" + byok,
			model: "openai/gpt-4o", status: 200, auths: []string{"Bearer " + callerSecret}, repeat: 5},
		{name: "caller key failure without the safety net is preserved", settings: byok, model: "openai/gpt-4o",
			fault: "error=openai/invalid_api_key", status: 401, auths: []string{"Bearer " + callerSecret}},
		{name: "safety net answers on the platform key", settings: "safety_net = true\nplan = \"pro\"\n" + byok, model: "openai/gpt-4o",
			fault: "error=openai/invalid_api_key;times=1", status: 200, auths: []string{"Bearer " + callerSecret, platform},
			switched: "safety_net", reason: "unauthorized", fallback: true},
		{name: "positive credit is eligible too", settings: "safety_net = true\ncredit_usd = 5.0\n" + byok, model: "openai/gpt-4o",
			fault: "status=503;times=1", status: 200, auths: []string{"Bearer " + callerSecret, platform},
			switched: "safety_net", reason: "server_error", fallback: true},
		{name: "ineligible account keeps the caller's error", settings: "safety_net = true\n" + byok, model: "openai/gpt-4o",
			fault: "status=503;times=1", status: 503, auths: []string{"Bearer " + callerSecret}},
		{name: "a client error is not retried on the platform key", settings: "safety_net = true\nplan = \"pro\"\n" + byok, model: "openai/gpt-4o",
			fault: "error=openai/invalid_request;times=1", status: 400, auths: []string{"Bearer " + callerSecret}},
		{name: "caller-key-only model refuses the safety net", settings: "safety_net = true\nplan = \"pro\"\n" + byok, model: "openai/gpt-4o-mini",
			fault: "status=503;times=1", status: 403, code: "safety_net_not_permitted", auths: []string{"Bearer " + callerSecret}},
		{name: "a budget that cannot pay for one token keeps the caller's error", settings: "safety_net = true\nplan = \"pro\"\nmonthly_budget_usd = 0.0000001\n" + byok,
			model: "openai/gpt-4o", fault: "status=503;times=1", status: 503, auths: []string{"Bearer " + callerSecret}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var prep func(string)
			if tc.model == "openai/gpt-4o-mini" {
				prep = onlyCallers
			}
			h := newHarnessPrep(t, prep, batchKey(tc.settings))
			var hdr []string
			if tc.fault != "" {
				hdr = []string{"X-Sim-Fault", tc.fault}
			}
			for i := 1; i < tc.repeat; i++ {
				resp, body := h.post(secretBatch, chatBody(tc.model, fmt.Sprintf(`,"user":"r%d"`, i)), hdr...)
				require.Equal(t, tc.status, resp.StatusCode, string(body))
				h.sent.take()
			}
			resp, body := h.post(secretBatch, chatBody(tc.model, ""), hdr...)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			if tc.code != "" {
				var e errBody
				require.NoError(t, json.Unmarshal(body, &e))
				require.Equal(t, tc.code, e.Error.Code)
			}
			var auths []string
			for _, s := range h.sent.take() {
				auths = append(auths, s.Auth)
			}
			require.Equal(t, tc.auths, auths)
			row := h.row(resp.Header.Get(gateway.HeaderRequestID))
			require.Equal(t, len(tc.auths), row.Attempts)
			require.Equal(t, tc.switched, row.RoutingSwitchReason)
			require.Equal(t, tc.reason, row.FallbackReason)
			if tc.fallback {
				require.Equal(t, "true", resp.Header.Get(gateway.HeaderFallback))
			}
			require.NotContains(t, string(body)+h.logs.String(), callerSecret)
		})
	}
}

// TestCallerKeyUnauthorizedFailsOverOnARoute: on the caller's own key a 401
// is retryable, so a route moves on; on the platform key it is final.
func TestCallerKeyUnauthorizedFailsOverOnARoute(t *testing.T) {
	t.Setenv("BATCH_OPENAI_KEY", callerSecret)
	route := "\n[[routes]]\nmodel = \"own-key-first\"\n[[routes.targets]]\nupstream = \"openai\"\nmodel = \"openai/gpt-4o\"\n" +
		"[[routes.targets]]\nupstream = \"market\"\nmodel = \"openai/gpt-4o-mini\"\n"
	h := newHarness(t, batchKey("[keys.byok]\nopenai_env = \"BATCH_OPENAI_KEY\"\n"),
		[2]string{"\n# The cheap model answers everything", route + "\n# The cheap model answers everything"})
	fault := []string{"X-Sim-Fault", "error=openai/invalid_api_key;model=openai/gpt-4o"}
	resp, b := h.post(secretBatch, chatBody("own-key-first", noChain), fault...)
	require.Equal(t, 200, resp.StatusCode, string(b))
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 2, row.Attempts)
	require.Equal(t, "unauthorized", row.FallbackReason)
	require.Equal(t, "openai/gpt-4o-mini", row.ServedModel)

	// k-chat has no caller key: the same 401 on the platform key is final.
	resp, _ = h.post(secretChat, chatBody("own-key-first", noChain), fault...)
	require.Equal(t, 401, resp.StatusCode)
	require.Equal(t, 1, h.row(resp.Header.Get(gateway.HeaderRequestID)).Attempts)
}

// TestBudgets: platform-key spend is metered per key and per team, monthly;
// an exhausted budget refuses with 402; the completion cap is lowered so the
// remaining budget cannot be overrun; spend survives a restart.
func TestBudgets(t *testing.T) {
	h := newHarness(t, batchKey("monthly_budget_usd = 0.0004\n"))
	// The cap: 0.0004 USD at gpt-4o-mini's highest output price (0.6 USD/Mtok)
	// pays for ~666 completion tokens; a request asking for 4000 is lowered.
	resp, b := h.post(secretBatch, chatBody("openai/gpt-4o-mini", `,"max_tokens":4000`))
	require.Equal(t, 200, resp.StatusCode, string(b))
	sent := h.sent.take()
	require.Len(t, sent, 1)
	// The OpenAI connector sends the cap as max_completion_tokens.
	var upstreamBody struct {
		MaxTokens int `json:"max_completion_tokens"`
	}
	require.NoError(t, json.Unmarshal(sent[0].Body, &upstreamBody))
	require.Greater(t, upstreamBody.MaxTokens, 600)
	require.Less(t, upstreamBody.MaxTokens, 700)
	// A request within the cap is sent as asked.
	resp, _ = h.post(secretBatch, chatBody("openai/gpt-4o-mini", `,"max_tokens":50`))
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, json.Unmarshal(h.sent.take()[0].Body, &upstreamBody))
	require.Equal(t, 50, upstreamBody.MaxTokens)

	// Spend until the budget is gone (bounded).
	var status int
	for i := 0; i < 400; i++ {
		resp, _ := h.post(secretBatch, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"spend-%d","max_tokens":30`, i)))
		status = resp.StatusCode
		if status != 200 {
			break
		}
	}
	require.Equal(t, 402, status, "the budget must run out")
	h.sent.take()
	resp, b = h.post(secretBatch, chatBody("openai/gpt-4o-mini", ""))
	require.Equal(t, 402, resp.StatusCode)
	var e errBody
	require.NoError(t, json.Unmarshal(b, &e))
	require.Equal(t, "budget_exhausted", e.Error.Code)
	require.Empty(t, h.sent.take(), "an exhausted budget contacts no upstream")

	// Other keys (no budget of their own, team without one) are not affected.
	resp, _ = h.post(secretChat, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 200, resp.StatusCode)

	// Spend survives a restart: a new server on the same directory refuses too.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Close(ctx))
	srv, err := gateway.New(gateway.Options{ConfigDir: h.dir, UpstreamURLs: map[string]string{"openai": h.sim.URL("openai")}})
	require.NoError(t, err)
	defer srv.Close(ctx)
	h.ts.Config.Handler = srv.Handler()
	resp, _ = h.post(secretBatch, chatBody("openai/gpt-4o-mini", ""))
	require.Equal(t, 402, resp.StatusCode)
}

// TestTeamBudget: a team's budget binds all of its keys.
func TestTeamBudget(t *testing.T) {
	h := newHarness(t, [2]string{"\n# The cheap model answers everything", "\n[[teams]]\nname = \"ml\"\nmonthly_budget_usd = 0.00002\n\n# The cheap model answers everything"})
	var status int
	for i := 0; i < 100; i++ {
		resp, _ := h.post(secretBatch, chatBody("openai/gpt-4o", fmt.Sprintf(`,"user":"t-%d"`, i)))
		if status = resp.StatusCode; status != 200 {
			break
		}
	}
	require.Equal(t, 402, status)
	resp, _ := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"other-key-same-team"`))
	require.Equal(t, 402, resp.StatusCode, "another key of the same team is bound too")
	resp, _ = h.post(secretResearch, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 200, resp.StatusCode, "another team is not")
}

// TestBudgetHoldsAttemptsInFlight: attempts in flight together hold their
// worst-case cost, so their caps together fit the budget: four unbounded
// requests at once on a 0.0004 USD budget are not each capped to all of it.
func TestBudgetHoldsAttemptsInFlight(t *testing.T) {
	h := newHarness(t, batchKey("monthly_budget_usd = 0.0004\n"), [2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := h.post(secretBatch, chatBody("openai/gpt-4o-mini", fmt.Sprintf(`,"user":"inflight-%d"`, i)), "X-Sim-Fault", "delay=300ms")
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	require.Contains(t, statuses, 200)
	worst := 0.0
	for _, s := range h.sent.take() {
		var b struct {
			MaxTokens int `json:"max_completion_tokens"` // as the OpenAI connector sends it
		}
		require.NoError(t, json.Unmarshal(s.Body, &b))
		require.Positive(t, b.MaxTokens, "every metered attempt is capped")
		worst += float64(b.MaxTokens) * 0.6 / 1e6 // gpt-4o-mini's highest output price
	}
	require.LessOrEqual(t, worst, 0.0004, "the caps of the attempts in flight overran the budget: %v", statuses)
	for _, s := range statuses {
		require.Contains(t, []int{200, 402}, s)
	}
}

// TestBudgetCapCoversTheChain: a marketplace may serve any model of the
// chain it is sent, so the cap is priced at the dearest of them: k-chat's
// gpt-4o (10 USD per million output tokens) travels with a chain holding
// claude-sonnet-4.5 (15), and 0.003 USD pays for under 200 tokens of it.
func TestBudgetCapCoversTheChain(t *testing.T) {
	h := newHarness(t, [2]string{"project = \"chat\"\n", "project = \"chat\"\nmonthly_budget_usd = 0.003\n"},
		[2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"})
	resp, b := h.post(secretChat, chatBody("openai/gpt-4o", ""))
	require.Equal(t, 200, resp.StatusCode, string(b))
	sent := h.sent.take()
	require.Len(t, sent, 1)
	var body struct {
		MaxTokens int      `json:"max_tokens"`
		Models    []string `json:"models"`
	}
	require.NoError(t, json.Unmarshal(sent[0].Body, &body))
	require.Contains(t, body.Models, "anthropic/claude-sonnet-4.5")
	require.Greater(t, body.MaxTokens, 150)
	require.LessOrEqual(t, body.MaxTokens, 200, "priced at gpt-4o alone the cap would be ~300")
}
