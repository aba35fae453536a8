package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	sluice "github.com/sluicegw/sluice"
	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/simulator"
	"github.com/sluicegw/sluice/store/requestlog"
)

// demoStep is one scripted request of the demo.
type demoStep struct {
	title   string
	secret  string
	body    string
	headers map[string]string
	// path is the API called; default /v1/chat/completions. The Messages
	// API's steps send the key as Anthropic clients do (x-api-key).
	path string
}

// demoSteps exercise each outcome a compliance reviewer reads about: plain,
// degraded, refused, a fallback chain firing, a cache hit, a stream, and
// the other two APIs on the same policy.
var demoSteps = []demoStep{
	{title: "plain: ml team, openai/gpt-4o on the marketplace (its preferred order leaves the project's ranking inert there: recorded)", secret: "sk-sluice-demo-chat",
		body: `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise our Q3 incidents."}]}`},
	{title: "degraded: batch key on the direct OpenAI upstream, which cannot walk the team's chain", secret: "sk-sluice-demo-batch",
		body: `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Classify these tickets."}]}`},
	{title: "refused: finance key on an upstream with no deny knob, while the org denies deepinfra/fp4", secret: "sk-sluice-demo-finance",
		body: `{"model":"anthropic/claude-sonnet-4.5","messages":[{"role":"user","content":"Reconcile the ledger."}]}`},
	{title: "refused: guardrail forbids x-ai models for everyone", secret: "sk-sluice-demo-chat",
		body: `{"model":"x-ai/grok-4","messages":[{"role":"user","content":"Hello"}]}`},
	{title: "chain fires: the decided model fails upstream, the marketplace walks the chain", secret: "sk-sluice-demo-chat",
		body:    `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Draft the release notes."}]}`,
		headers: map[string]string{"X-Sim-Fault": "status=503;model=openai/gpt-4o", "X-Session-Id": "demo-session-1"}},
	{title: "cache hit: the first request again, answered without contacting any provider", secret: "sk-sluice-demo-chat",
		body: `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise our Q3 incidents."}]}`},
	{title: "stream: research team, filtered upstream, streamed chunk by chunk", secret: "sk-sluice-demo-research",
		body: `{"model":"anthropic/claude-haiku-4.5","stream":true,"messages":[{"role":"user","content":"Explain the study design."}]}`},
	{title: "Messages API: Claude Code's request (x-api-key, Anthropic's model id, context_management, cache_control) on the marketplace, sent to its own Messages endpoint", secret: "sk-sluice-demo-chat",
		path: "/v1/messages", headers: map[string]string{"anthropic-beta": "context-management-2025-06-27"},
		body: `{"model":"claude-sonnet-4-5","max_tokens":512,"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},` +
			`"system":[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"Review this diff."}]}`},
	{title: "Responses API: an OpenAI Responses client (as Codex: store false, the whole transcript) on the marketplace, sent to its own Responses endpoint", secret: "sk-sluice-demo-chat",
		path: "/v1/responses", body: `{"model":"openai/gpt-4o","store":false,"input":[{"role":"user","content":[{"type":"input_text","text":"List the failing tests."}]}]}`},
	{title: "data policy: a request that requires zero retention on the marketplace, served only by an endpoint the catalog marks as keeping nothing (the upstream's own knob, recorded in the row)", secret: "sk-sluice-demo-chat",
		body: `{"model":"anthropic/claude-sonnet-4.5","messages":[{"role":"user","content":"Summarise the patient notes."}],"routing":{"data":{"zero_retention":true}}}`},
	{title: "refused: the same requirement on the direct OpenAI upstream, whose endpoint the catalog says retains and whose account declares no agreement", secret: "sk-sluice-demo-batch",
		body: `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise the patient notes."}],"routing":{"data":{"zero_retention":true}}}`},
	{title: "embeddings: ml team, the team's provider order on the marketplace, recorded with the input's tokens", secret: "sk-sluice-demo-chat",
		path: "/v1/embeddings", body: `{"model":"openai/text-embedding-3-small","input":["incident 1412","incident 1413"]}`},
	demoVertexStep,
	demoAzureStep,
	// Amazon Bedrock.
	{title: "Amazon Bedrock: a Messages request on Claude through its US cross-region inference profile, sent natively over InvokeModel with a Bedrock API key", secret: "sk-sluice-demo-chat",
		path: "/v1/messages", body: `{"model":"claude-on-bedrock","max_tokens":256,"messages":[{"role":"user","content":"Triage this alert."}]}`},
	{title: "Amazon Bedrock Converse: a chat request on Llama 3.3 70B through its US cross-region inference profile, a model that is not Anthropic's, translated onto Bedrock's Converse API", secret: "sk-sluice-demo-chat",
		body: `{"model":"llama-on-bedrock","messages":[{"role":"user","content":"Triage this alert."}]}`},
}

// demoBedrockKey is the Bedrock API key of the demo's simulated Bedrock:
// the demo sets AWS_BEARER_TOKEN_BEDROCK, the demo upstream's api_key_env,
// to it in its own process, so that a real key in the environment is
// never sent to the simulator.
const demoBedrockKey = "bedrock-api-key-sluice-demo"

func runDemo(env *cliEnv, args []string) int {
	fs := newFlags(env, "demo", "[--dir DIR] [--serve [--listen ADDR]]")
	dir := fs.String("dir", filepath.Join(os.TempDir(), "sluice-demo"), "working directory for the demo's config copy and database (recreated)")
	serve := fs.Bool("serve", false, "after the scripted requests, keep the simulator, the gateway and the compliance pages running until Ctrl-C")
	listen := fs.String("listen", "127.0.0.1:8080", "with --serve: the gateway's address")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	out := env.stdout
	cfgDir := filepath.Join(*dir, "config")
	if err := os.RemoveAll(*dir); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: %v\n", err)
		return 1
	}
	if err := os.CopyFS(cfgDir, sluice.DemoConfig()); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: writing the demo config: %v\n", err)
		return 1
	}
	fmt.Fprintf(out, "sluice demo\n  config:   %s (a copy of testdata/demo)\n", cfgDir)
	// Claude on Google Vertex AI: an upstream and a key added to the copy.
	vx, err := demoVertex(cfgDir)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: the Vertex AI upstream: %v\n", err)
		return 1
	}
	defer vx.Close()

	azureKey, err := demoAzure(cfgDir)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: writing the demo config: %v\n", err)
		return 1
	}

	// The upstreams are the marketplace simulator: real HTTP on loopback.
	boot, diags := bootSnapshot(cfgDir)
	if diags != nil {
		printLoadError(env, diags)
		return 1
	}
	simCfg := simulator.FromCatalog(boot)
	simCfg.AzureAPIKey = azureKey
	simCfg.BedrockAPIKeys = []string{demoBedrockKey}
	if err := os.Setenv("AWS_BEARER_TOKEN_BEDROCK", demoBedrockKey); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: %v\n", err)
		return 1
	}
	sim := simulator.New(simCfg)
	if _, err := sim.Start(); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: simulator: %v\n", err)
		return 1
	}
	defer sim.Close()
	vx.Generate(sim)
	urls := map[string]string{}
	for _, u := range []struct{ name, kind string }{{"market", "openrouter"}, {"edge", "vercel"}, {"openai", "openai"}, {"anthropic", "anthropic"}, {"azure", simulator.KindAzure}, {"bedrock", "bedrock"}} {
		urls[u.name] = sim.URL(u.kind)
	}
	fmt.Fprintf(out, "  upstream: marketplace simulator at %s\n", sim.BaseURL())

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := gateway.New(gateway.Options{ConfigDir: cfgDir, Logger: logger, UpstreamURLs: urls})
	if err != nil {
		printLoadError(env, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: %v\n", err)
		return 1
	}
	hs := newHTTPServer(srv.Handler(), context.Background())
	go func() { _ = hs.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "  gateway:  %s\n\n", base)

	client := &http.Client{Timeout: 30 * time.Second}
	failed := 0
	for i, st := range demoSteps {
		fmt.Fprintf(out, "[%d/%d] %s\n", i+1, len(demoSteps), st.title)
		line, ok := demoRequest(client, base, st)
		fmt.Fprintf(out, "      %s\n", line)
		if !ok {
			failed++
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
	if err := srv.Close(ctx); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: flushing the request log: %v\n", err)
		return 1
	}
	dbPath := filepath.Join(cfgDir, "data", requestlog.File)
	store, err := requestlog.OpenSQLite(dbPath)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: %v\n", err)
		return 1
	}
	defer store.Close()
	page, err := store.Query(ctx, requestlog.Filter{Limit: 100})
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: %v\n", err)
		return 1
	}
	fmt.Fprintf(out, "\nRecorded rows (newest first):\n")
	if err := requestlog.WriteRows(out, page.Rows, "table"); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: %v\n", err)
		return 1
	}
	fmt.Fprintf(out, "\nDatabase: %s\nRead it again with: sluice rows --config %s\n", dbPath, cfgDir)
	if failed > 0 || len(page.Rows) != len(demoSteps) {
		fmt.Fprintf(env.stderr, "sluice demo: %d step(s) did not behave as scripted; %d rows recorded for %d requests\n", failed, len(page.Rows), len(demoSteps))
		return 1
	}
	if *serve {
		return demoServe(env, cfgDir, sim, urls, *listen)
	}
	return 0
}

// demoKeys are the demo configuration's keys, as its sluice.toml lists them.
var demoKeys = []struct{ id, secret, what string }{
	{"k-chat", "sk-sluice-demo-chat", "team ml, project chat: the marketplace"},
	{"k-research", "sk-sluice-demo-research", "team research: a filtered upstream, redacted"},
	{"k-finance", "sk-sluice-demo-finance", "team finance: providers under a DPA only"},
	{"k-batch", "sk-sluice-demo-batch", "team ml, project batch: the direct OpenAI upstream"},
	{"k-analyst", "sk-sluice-demo-analyst", "analyst: reads the request log and the pages"},
	{"k-azure", demoAzureSecret, "team cloud, project azure: the Azure OpenAI upstream (added by the demo)"},
}

// demoServe serves the demo's configuration on listen, with an admin token
// made for this run and the compliance pages, against the demo's simulator,
// until Ctrl-C (or env.interrupt). It prints what a user needs to try it:
// the URLs, the token and keys, and one command per API and coding agent.
func demoServe(env *cliEnv, cfgDir string, sim *simulator.Server, urls map[string]string, listen string) int {
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	token := "sluice-demo-admin-" + hex.EncodeToString(rnd[:]) // 50 characters
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := gateway.New(gateway.Options{ConfigDir: cfgDir, Logger: logger, UpstreamURLs: urls, AdminToken: token, Pages: compliancePages})
	if err != nil {
		printLoadError(env, err)
		return 1
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		_ = srv.Close(context.Background())
		fmt.Fprintf(env.stderr, "sluice demo: --listen: %v (pick another address with --listen 127.0.0.1:0)\n", err)
		return 1
	}
	hs := newHTTPServer(srv.Handler(), context.Background())
	go func() { _ = hs.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	out := env.stdout
	fmt.Fprintf(out, "\nServing until Ctrl-C (config %s):\n", cfgDir)
	fmt.Fprintf(out, "  gateway:      %s  (OpenAI-compatible API under /v1, Messages API at /v1/messages)\n", base)
	fmt.Fprintf(out, "  pages:        %s/ui/  (sign in with the admin token or the analyst key)\n", base)
	fmt.Fprintf(out, "  simulator:    %s  (openrouter %s, vercel %s, openai %s, anthropic %s)\n", sim.BaseURL(),
		sim.URL(simulator.KindOpenRouter), sim.URL(simulator.KindVercel), sim.URL(simulator.KindOpenAI), sim.URL(simulator.KindAnthropic))
	fmt.Fprintf(out, "  admin token:  %s  (SLUICE_ADMIN_TOKEN for this run: the admin and analytics APIs, the pages)\n", token)
	fmt.Fprintln(out, "  keys:")
	for _, k := range demoKeys {
		fmt.Fprintf(out, "    %-11s %-24s %s\n", k.id, k.secret, k.what)
	}
	fmt.Fprintln(out, "\nTry it (copy and paste):")
	for _, c := range demoCommands(base) {
		fmt.Fprintf(out, "  # %s\n  %s\n", c.what, c.command)
	}
	env.serveUntilStopped()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
	if err := srv.Close(ctx); err != nil {
		fmt.Fprintf(env.stderr, "sluice demo: flushing the request log: %v\n", err)
		return 1
	}
	return 0
}

// demoCommand is one copy-paste command demo --serve prints.
type demoCommand struct{ what, command string }

// demoCommands are one command per API and per coding agent, against base,
// with the ml team's key and models of the demo catalog.
func demoCommands(base string) []demoCommand {
	const key = "sk-sluice-demo-chat"
	curl := func(path, auth, body string, headers ...string) string {
		c := "curl -sS " + base + path + " -H '" + auth + "' -H 'Content-Type: application/json'"
		for _, h := range headers {
			c += " -H '" + h + "'"
		}
		return c + " -d '" + body + "'"
	}
	return []demoCommand{
		{"chat completions", curl("/v1/chat/completions", "Authorization: Bearer "+key, `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Hello"}]}`)},
		{"Messages API (Anthropic's model ids work too)", curl("/v1/messages", "x-api-key: "+key, `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"Hello"}]}`, "anthropic-version: 2023-06-01")},
		{"Responses API", curl("/v1/responses", "Authorization: Bearer "+key, `{"model":"openai/gpt-4o","input":"Hello"}`)},
		{"embeddings", curl("/v1/embeddings", "Authorization: Bearer "+key, `{"model":"openai/text-embedding-3-small","input":"Hello"}`)},
		{"Claude Code", "ANTHROPIC_BASE_URL=" + base + " ANTHROPIC_AUTH_TOKEN=" + key + " claude"},
		{"Codex (a custom provider on the Responses API)", "SLUICE_KEY=" + key + " codex -m openai/gpt-4o -c model_provider=sluice -c 'model_providers.sluice={name=\"sluice\", base_url=\"" + base + "/v1\", env_key=\"SLUICE_KEY\", wire_api=\"responses\"}'"},
	}
}

// demoRequest sends one step and describes the answer in a line. ok reports
// whether the outcome is the one the step's title promises.
func demoRequest(client *http.Client, base string, st demoStep) (string, bool) {
	path := st.path
	if path == "" {
		path = "/v1/chat/completions"
	}
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader([]byte(st.body)))
	if path == "/v1/messages" {
		req.Header.Set("x-api-key", st.secret)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+st.secret)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range st.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "error: " + err.Error(), false
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	h := resp.Header
	switch {
	case resp.StatusCode != http.StatusOK:
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return fmt.Sprintf("%d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message), strings.HasPrefix(st.title, "refused")
	case strings.HasPrefix(h.Get("Content-Type"), "text/event-stream"):
		chunks := strings.Count(string(raw), "data: ")
		return fmt.Sprintf("200 stream: %d events, ends with [DONE]: %t (request %s)", chunks, strings.Contains(string(raw), "data: [DONE]"), h.Get(gateway.HeaderRequestID)), strings.Contains(string(raw), "[DONE]")
	default:
		line := "200 served by " + h.Get(gateway.HeaderServedModel)
		if p := h.Get(gateway.HeaderServedProvider); p != "" {
			line += " via " + p
		} else {
			line += " (the upstream did not say which provider)"
		}
		if d := h.Get(gateway.HeaderDegraded); d != "" {
			line += ", degraded: " + d
		}
		if h.Get(gateway.HeaderCache) == "hit" {
			line += " (from the response cache)"
		}
		var shape struct {
			Type   string `json:"type"`
			Object string `json:"object"`
		}
		if json.Unmarshal(raw, &shape) == nil && shape.Type == "message" {
			line += " (a Messages API message)"
		} else if shape.Object == "response" {
			line += " (a Responses API response)"
		} else if shape.Object == "list" {
			line += " (embeddings)"
		}
		return line, !strings.HasPrefix(st.title, "refused")
	}
}

// bootSnapshot loads the demo catalog so the simulator serves the same models.
func bootSnapshot(dir string) (*guardrails.Catalog, error) {
	cat, diags := guardrails.LoadCatalog(dir)
	if len(diags) > 0 {
		return nil, diags
	}
	return cat, nil
}
