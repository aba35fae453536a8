package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/admin"
	"github.com/sluicegw/sluice/schemas"
)

// openAPISchemas compiles the OpenAPI document's component schemas (JSON
// Schema 2020-12) with the embedded sluice schemas they reference.
func openAPISchemas(t *testing.T) func(name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	const base = "https://github.com/sluicegw/sluice/openapi.json"
	require.NoError(t, c.AddResource(base, bytes.NewReader(admin.OpenAPI())))
	fsys := schemas.FS()
	entries, err := fsys.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		b, err := fsys.ReadFile(e.Name())
		require.NoError(t, err)
		require.NoError(t, c.AddResource(schemas.BaseID+e.Name(), bytes.NewReader(b)))
	}
	return func(name string) *jsonschema.Schema {
		s, err := c.Compile(base + "#/components/schemas/" + name)
		require.NoError(t, err)
		return s
	}
}

func conforms(t *testing.T, s *jsonschema.Schema, body []byte) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	require.NoError(t, s.Validate(v), string(body))
}

func (h *harness) admin(method, path, token, body string) (int, []byte) {
	h.t.Helper()
	resp, b := h.do(method, path, token, body)
	return resp.StatusCode, b
}

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct{ Pointer, Code, Message string }
	} `json:"error"`
}

func TestAdminAuth(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		token  string
		status int
	}{{"", 401}, {"wrong", 401}, {secretChat, 401}, {secretAnalyst, 401}, {adminToken, 200}} {
		status, _ := h.admin("GET", "/api/v1/routes", tc.token, "")
		require.Equal(t, tc.status, status, "token %q", tc.token)
	}
	// Without a configured token the admin API does not exist.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Close(ctx))
	srv, err := gateway.New(gateway.Options{ConfigDir: h.dir})
	require.NoError(t, err)
	defer srv.Close(ctx)
	h.ts.Config.Handler = srv.Handler()
	status, _ := h.admin("GET", "/api/v1/routes", adminToken, "")
	require.Equal(t, 404, status)
	status, _ = h.admin("GET", "/api/v1/openapi.json", "", "")
	require.Equal(t, 200, status)
}

// TestAdminRoutes exercises every endpoint and refusal path, and validates
// every answer against the OpenAPI document.
func TestAdminRoutes(t *testing.T) {
	h := newHarness(t)
	schema := openAPISchemas(t)
	req := func(method, path, body string) (int, []byte) { return h.admin(method, path, adminToken, body) }

	status, b := req("GET", "/api/v1/routes", "")
	require.Equal(t, 200, status)
	conforms(t, schema("RouteList"), b)
	var list admin.RouteList
	require.NoError(t, json.Unmarshal(b, &list))
	require.Len(t, list.Data, 4)
	for _, r := range list.Data {
		for _, tg := range r.AllTargets() {
			require.NotNil(t, tg.TakesOver, "every target carries takes_over")
			require.NotEmpty(t, tg.ID)
		}
	}
	require.Contains(t, string(b), `"takes_over":[]`)

	// Create a route; it serves the next request.
	status, b = req("PUT", "/api/v1/routes/summaries", `{"targets":[{"upstream":"market","model":"openai/gpt-4o-mini"}]}`)
	require.Equal(t, 201, status, string(b))
	conforms(t, schema("Route"), b)
	resp, body := h.post(secretChat, chatBody("summaries", noChain))
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Equal(t, "openai/gpt-4o-mini", resp.Header.Get(gateway.HeaderServedModel))

	// Add a restricted target, then delete it by id.
	status, b = req("POST", "/api/v1/routes/summaries/targets", `{"upstream":"anthropic","model":"anthropic/claude-haiku-4.5","takes_over":["refusal"]}`)
	require.Equal(t, 201, status, string(b))
	conforms(t, schema("Route"), b)
	require.Contains(t, string(b), `"id":"t2"`)

	refusals := []struct {
		name, method, path, body string
		status                   int
		code                     string
		pointers                 []string
	}{
		{"only restricted targets", "PUT", "/api/v1/routes/summaries", `{"targets":[{"upstream":"market","model":"a/b","takes_over":["throttled"]}]}`,
			422, "all_targets_restricted", []string{"/targets"}},
		{"deleting the last ordinary target", "DELETE", "/api/v1/routes/summaries/targets/t1", "", 422, "all_targets_restricted", []string{"/"}},
		{"every schema error at once", "PUT", "/api/v1/routes/summaries", `{"strategy":"random","targets":[{"upstream":"market","takes_over":["sometimes"]}],"colour":1}`,
			422, "validation_failed", []string{"/", "/strategy", "/targets/0/takes_over/0"}},
		{"every cross-reference error at once", "PUT", "/api/v1/routes/summaries", `{"targets":[{"upstream":"nowhere"},{"upstream":"elsewhere"}],"then":{"targets":[{"upstream":"market"}]}}`,
			422, "validation_failed", []string{"/targets/0/upstream", "/targets/1/upstream", "/then"}},
		{"model differs from the path", "PUT", "/api/v1/routes/summaries", `{"model":"other","targets":[{"upstream":"market"}]}`, 422, "validation_failed", []string{"/model"}},
		// Two weights of 2^62 overflowed the weighted pick, which panicked
		// with the planner locked: every routed request hung after.
		{"weights that overflow", "PUT", "/api/v1/routes/summaries", `{"strategy":"weighted","targets":[{"upstream":"market","model":"openai/gpt-4o","weight":4611686018427387904},{"upstream":"market","model":"openai/gpt-4o-mini","weight":4611686018427387904}]}`,
			422, "validation_failed", []string{"/targets/0/weight", "/targets/1/weight"}},
		{"an alias with a bidi override", "PUT", "/api/v1/routes/%E2%80%AEsummaries", `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`, 422, "validation_failed", []string{"/model"}},
		{"an alias with a line break", "PUT", "/api/v1/routes/a%0D%0Ab", `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`, 422, "validation_failed", []string{"/model"}},
		{"an alias that shadows a catalog model", "PUT", "/api/v1/routes/openai%2Fgpt-4o-mini", `{"targets":[{"upstream":"anthropic","model":"anthropic/claude-haiku-4.5"}]}`,
			422, "validation_failed", []string{"/model"}},
		{"not JSON", "PUT", "/api/v1/routes/summaries", `{`, 400, "invalid_json", nil},
		{"unknown route", "GET", "/api/v1/routes/nope", "", 404, "not_found", nil},
		{"unknown target", "DELETE", "/api/v1/routes/summaries/targets/t9", "", 404, "not_found", nil},
		{"a target added to an unknown route", "POST", "/api/v1/routes/nope/targets", `{"upstream":"market","takes_over":["refusal"]}`, 404, "not_found", nil},
	}
	_, auditBefore := req("GET", "/api/v1/audit", "")
	_, routesBefore := req("GET", "/api/v1/routes", "")
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			status, b := req(tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, status, string(b))
			conforms(t, schema("Error"), b)
			var e apiError
			require.NoError(t, json.Unmarshal(b, &e))
			require.Equal(t, tc.code, e.Error.Code)
			if tc.pointers != nil {
				var got []string
				for _, d := range e.Error.Details {
					got = append(got, d.Pointer)
				}
				require.Equal(t, tc.pointers, got)
			}
			if tc.name == "an alias that shadows a catalog model" {
				require.Equal(t, "route_alias_shadows_model", e.Error.Details[0].Code)
			}
		})
	}
	_, routesAfter := req("GET", "/api/v1/routes", "")
	_, auditAfter := req("GET", "/api/v1/audit", "")
	require.JSONEq(t, string(routesBefore), string(routesAfter), "a refused change changes nothing")
	require.JSONEq(t, string(auditBefore), string(auditAfter), "and records nothing")

	status, b = req("DELETE", "/api/v1/routes/summaries/targets/t2", "")
	require.Equal(t, 200, status, string(b))
	require.NotContains(t, string(b), `"t2"`)

	// The audit trail: who (a token hash prefix, never the token), before and after.
	status, b = req("GET", "/api/v1/audit?limit=2", "")
	require.Equal(t, 200, status)
	conforms(t, schema("AuditList"), b)
	require.NotContains(t, string(b), adminToken)
	var audit admin.AuditList
	require.NoError(t, json.Unmarshal(b, &audit))
	require.Len(t, audit.Data, 2)
	require.Equal(t, "target.delete", audit.Data[0].Action)
	require.Contains(t, string(audit.Data[0].Before), `"t2"`)
	require.NotContains(t, string(audit.Data[0].After), `"t2"`)
	require.Regexp(t, `^admin:[0-9a-f]{12}$`, audit.Data[0].Actor)
	require.NotEmpty(t, audit.NextCursor)
	status, b = req("GET", "/api/v1/audit?cursor="+audit.NextCursor, "")
	require.Equal(t, 200, status)
	require.NoError(t, json.Unmarshal(b, &audit))
	require.Equal(t, "import", audit.Data[len(audit.Data)-1].Action, "the first entry is the seed import")

	// Read-only views.
	status, b = req("GET", "/api/v1/explain?key=k-chat&model=free-pool", "")
	require.Equal(t, 200, status, string(b))
	conforms(t, schema("Explanation"), b)
	require.Contains(t, string(b), `"route":"free-pool"`)
	status, b = req("GET", "/api/v1/profiles/effective?key=k-finance", "")
	require.Equal(t, 200, status)
	conforms(t, schema("Explanation"), b)
	require.Contains(t, string(b), `"fallbacks":"team:finance"`)
	status, _ = req("GET", "/api/v1/explain?key=nope&model=x", "")
	require.Equal(t, 404, status)
	_, b = h.get("/api/v1/analytics/invocations", adminToken)
	conforms(t, schema("Invocations"), b)

	// Delete the route: the alias no longer routes.
	status, _ = req("DELETE", "/api/v1/routes/summaries", "")
	require.Equal(t, 204, status)
	resp, _ = h.post(secretChat, chatBody("summaries", noChain+`,"user":"after-delete"`))
	require.Equal(t, 404, resp.StatusCode, "no longer a route, and not a catalog model: model_not_in_catalog")

	// Route ids in the path are unescaped and compare case-insensitively, as
	// aliases do: an alias with a slash (valid in sluice.toml) is reachable
	// as %2F, and the audit trail holds the route before and after.
	status, b = req("PUT", "/api/v1/routes/Acme%2FChat", `{"model":"acme/chat","targets":[{"upstream":"market","model":"openai/gpt-4o-mini"}]}`)
	require.Equal(t, 201, status, string(b))
	require.Contains(t, string(b), `"model":"acme/chat"`)
	status, b = req("GET", "/api/v1/routes/ACME%2fchat", "")
	require.Equal(t, 200, status, string(b))
	resp, _ = h.post(secretChat, chatBody("Acme/Chat", noChain))
	require.Equal(t, 200, resp.StatusCode)
	status, _ = req("DELETE", "/api/v1/routes/Acme%2FChat", "")
	require.Equal(t, 204, status)
	status, b = req("GET", "/api/v1/audit?limit=2", "")
	require.Equal(t, 200, status)
	require.NoError(t, json.Unmarshal(b, &audit))
	require.Equal(t, "route.delete", audit.Data[0].Action)
	require.Contains(t, string(audit.Data[0].Before), `"acme/chat"`, "the deleted route is in the trail")
	require.Equal(t, "null", string(audit.Data[0].After))
	require.Contains(t, string(audit.Data[1].After), `"acme/chat"`)

	// A restart keeps the API's changes.
	status, _ = req("PUT", "/api/v1/routes/kept", `{"targets":[{"upstream":"market","model":"openai/gpt-4o"}]}`)
	require.Equal(t, 201, status)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Close(ctx))
	srv, err := gateway.New(gateway.Options{ConfigDir: h.dir, AdminToken: adminToken, UpstreamURLs: map[string]string{"market": h.sim.URL("openrouter")}})
	require.NoError(t, err)
	defer srv.Close(ctx)
	h.ts.Config.Handler = srv.Handler()
	status, b = req("GET", "/api/v1/routes/kept", "")
	require.Equal(t, 200, status, string(b))
	status, _ = req("GET", "/api/v1/routes/summaries", "")
	require.Equal(t, 404, status)
}

// TestAdminConcurrentPuts: concurrent PUTs on one route never leave a torn
// route (last writer wins), and requests served meanwhile all succeed.
func TestAdminConcurrentPuts(t *testing.T) {
	h := newHarness(t)
	models := []string{"openai/gpt-4o", "openai/gpt-4o-mini", "mistralai/mistral-large", "meta-llama/llama-3.1-8b-instruct"}
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				m := models[(w+i)%len(models)]
				body := fmt.Sprintf(`{"targets":[{"upstream":"market","model":%q},{"upstream":"market","model":%q,"takes_over":["throttled"]}]}`, m, m)
				status, b := h.admin("PUT", "/api/v1/routes/busy", adminToken, body)
				if status != 200 && status != 201 {
					errs <- string(b)
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() { // traffic on the alias while it changes
		defer wg.Done()
		for i := 0; i < 30; i++ {
			resp, b := h.post(secretChat, chatBody("busy", noChain+fmt.Sprintf(`,"user":"c%d"`, i)))
			if resp.StatusCode != 200 && resp.StatusCode != 404 { // 404 (model_not_in_catalog) only before the first PUT lands
				errs <- string(b)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	status, b := h.admin("GET", "/api/v1/routes/busy", adminToken, "")
	require.Equal(t, 200, status)
	var r struct {
		Targets []struct{ Model string } `json:"targets"`
	}
	require.NoError(t, json.Unmarshal(b, &r))
	require.Len(t, r.Targets, 2)
	require.Equal(t, r.Targets[0].Model, r.Targets[1].Model, "both targets come from the same PUT: no torn state")
	_, ab := h.admin("GET", "/api/v1/audit?limit=1000", adminToken, "")
	require.Equal(t, 41, strings.Count(string(ab), `"action"`), "every change audited once, plus the seed import")
}
