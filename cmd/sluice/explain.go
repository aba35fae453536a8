package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/gateway/apierr"
	"github.com/sluicegw/sluice/gateway/request"
	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

func runExplain(env *cliEnv, args []string) int {
	fs := newFlags(env, "explain", "--key KEY_ID [--config DIR] [--model M] [--request FILE|-] [--upstream NAME] [--json]")
	dir := fs.String("config", ".", "configuration directory")
	keyID := fs.String("key", "", "key id whose principal to explain (required)")
	reqFile := fs.String("request", "", "a request body (JSON) to compile, in the shape of --api; - reads it from stdin")
	model := fs.String("model", "", "the model to explain a request for (a one-message request when --request is not given; it replaces the request's model when it is)")
	apiName := fs.String("api", "chat", "the API the request comes in on: chat, messages, responses or realtime (a session: --model only)")
	upstream := fs.String("upstream", "", "compile for this upstream only (default: every upstream)")
	asJSON := fs.Bool("json", false, "print the stable JSON form (documented in docs/upstreams.md)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *keyID == "" {
		fmt.Fprintln(env.stderr, "sluice explain: --key is required")
		fs.Usage()
		return 2
	}
	snap, diags := snapshot.Load(*dir)
	if len(diags) > 0 {
		fmt.Fprintln(env.stderr, diags.Error())
		return 1
	}
	key := snap.Config.KeyByID(*keyID)
	if key == nil {
		fmt.Fprintf(env.stderr, "sluice explain: no key %q in sluice.toml\n", *keyID)
		return 1
	}
	var creq *compiler.Request
	var body connectors.Body
	var in *connectors.Inbound
	if *apiName == "realtime" {
		// A session has no body: the model is all it asks.
		req, perr := request.ParseRealtime(*model)
		if perr != nil {
			fmt.Fprintf(env.stderr, "sluice explain: --api realtime needs --model: %s\n", perr.Message)
			return 2
		}
		creq = &compiler.Request{Model: snap.ResolveModel(req.Model, "openai")}
		body, in = req.Body, req.Inbound
	} else if *reqFile != "" || *model != "" {
		raw, err := readRequest(env, *reqFile, *model, *apiName)
		if err != nil {
			fmt.Fprintf(env.stderr, "sluice explain: %v\n", err)
			return 1
		}
		var req *request.Request
		var perr *apierr.Error
		switch *apiName {
		case "chat":
			req, perr = request.Parse(raw)
		case "messages":
			req, perr = request.ParseMessages(raw, nil)
		case "responses":
			req, perr = request.ParseResponses(raw)
		default:
			fmt.Fprintf(env.stderr, "sluice explain: --api %q: want chat, messages or responses\n", *apiName)
			return 2
		}
		if perr != nil {
			loc := *reqFile
			if perr.Param != "" {
				loc += "#" + perr.Param
			}
			fmt.Fprintf(env.stderr, "%s: %s: %s\n", loc, perr.Code, perr.Message)
			for _, d := range perr.Details {
				fmt.Fprintf(env.stderr, "%s#%s: %s: %s\n", *reqFile, d.Pointer, d.Code, d.Message)
			}
			return 1
		}
		creq = &compiler.Request{Model: req.Model, Routing: req.Routing}
		body, in = req.Body, req.Inbound
		if in != nil {
			// As the gateway does: a client's model name resolves through
			// the catalog's names.
			creq.Model = snap.ResolveModel(req.Model, inboundOwner(in.API))
		}
	}
	e, err := snap.ExplainFor(context.Background(), key, creq, body, in, *upstream)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice explain: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.MarshalIndent(e, "", "  ")
		fmt.Fprintln(env.stdout, string(b))
		return 0
	}
	printExplanation(env, e)
	return 0
}

// inboundOwner is the direct provider whose model ids an API's clients
// write: Anthropic's for the Messages API, OpenAI's otherwise.
func inboundOwner(api connectors.API) string {
	if api == connectors.APIMessages || api == connectors.APICountTokens {
		return "anthropic"
	}
	return "openai"
}

func printExplanation(env *cliEnv, e *snapshot.Explanation) {
	w := env.stdout
	p := e.Principal
	fmt.Fprintf(w, "principal: org %s, team %s, project %s, key %s\n\n", p.Org, p.Team, p.Project, p.Key)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE FIELD\tVALUE\tSET BY\tFILE")
	row := func(name string, set bool, value string) {
		if !set {
			fmt.Fprintf(tw, "%s\t(unset)\t-\t-\n", name)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, value, e.Provenance[name], e.Sources[name])
	}
	list := func(l []string) string { return "[" + strings.Join(l, ", ") + "]" }
	pv := e.Profile
	row("fallbacks", pv.Fallbacks != nil, list(pv.Fallbacks))
	rank := ""
	if pv.Providers.RankBy != nil {
		rank = *pv.Providers.RankBy
	}
	row("providers.rank_by", pv.Providers.RankBy != nil, rank)
	row("providers.preferred", pv.Providers.Preferred != nil, list(pv.Providers.Preferred))
	row("providers.allowed", pv.Providers.Allowed != nil, list(pv.Providers.Allowed))
	row("providers.denied", pv.Providers.Denied != nil, list(pv.Providers.Denied))
	if q := pv.Providers.Quantizations; q != nil {
		row("providers.quantizations", true, list(q))
	}
	if mp := pv.Providers.MaxPrice; mp != nil {
		if mp.Input != nil {
			row("providers.max_price.input", true, fmt.Sprint(*mp.Input))
		}
		if mp.Output != nil {
			row("providers.max_price.output", true, fmt.Sprint(*mp.Output))
		}
	}
	if d := pv.Data; d != nil {
		if d.ZeroRetention != nil {
			row("data.zero_retention", true, fmt.Sprint(*d.ZeroRetention))
		}
		if d.NoTraining != nil {
			row("data.no_training", true, fmt.Sprint(*d.NoTraining))
		}
	}
	tw.Flush()
	if g := e.Guardrail; g != nil {
		c := g.Counts
		count := func(n int) string {
			if n < 0 {
				return "unrestricted"
			}
			return fmt.Sprint(n)
		}
		fmt.Fprintf(w, "\nguardrail (revision %s): allowed models %s, denied models %d, allowed providers %s, denied providers %d",
			g.Revision, count(c.AllowedModels), c.DeniedModels, count(c.AllowedProviders), c.DeniedProviders)
		if g.ContentFilter != "" {
			fmt.Fprintf(w, ", content filter %q", g.ContentFilter)
		}
		fmt.Fprintln(w)
	}
	if e.DecidedModel == "" {
		return
	}
	if rv := e.Route; rv != nil {
		fmt.Fprintf(w, "\nroute %q (strategy %s, %d retries):\n", rv.Route, rv.Strategy, rv.Budget)
		for i, m := range rv.Members {
			fmt.Fprintf(w, "  %d. %s/%s\n", i+1, m.Upstream, m.Model)
		}
		for _, r := range rv.Restricted {
			if rv.Session {
				fmt.Fprintf(w, "  left out %s/%s: takes over %s, and a realtime session never uses a restricted target\n", r.Upstream, r.Model, strings.Join(r.TakesOver, ", "))
				continue
			}
			fmt.Fprintf(w, "  restricted %s/%s: takes over %s\n", r.Upstream, r.Model, strings.Join(r.TakesOver, ", "))
		}
		for _, r := range rv.Removed {
			fmt.Fprintf(w, "  removed %s/%s: %s\n", r.Target.Upstream, r.Target.Model, r.Reason)
		}
		for _, tl := range rv.Tail {
			fmt.Fprintf(w, "  then %s/%s, reached from the last member on %s\n", tl.Upstream, tl.Model, strings.Join(rv.TailOn, ", "))
		}
		for _, sk := range rv.Skipped {
			fmt.Fprintf(w, "  skipped %s/%s: %s\n", sk.Upstream, sk.Model, sk.Refused.Code)
		}
		for _, n := range rv.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	fmt.Fprintf(w, "\ndecided model: %s\nchain: %s\n", e.DecidedModel, list(e.Chain))
	for _, d := range e.Dropped {
		fmt.Fprintf(w, "  dropped %s (%s)\n", d.Model, d.Reason)
	}
	ps := e.Providers
	fmt.Fprintf(w, "providers: rank_by=%q preferred=%s allowed=%s denied=%s\n", ps.RankBy, list(ps.Preferred), allowedText(ps.Allowed), list(ps.Denied))
	if dp := e.Data; dp != nil {
		fmt.Fprintf(w, "data policy: %s", dp.Fields())
		if dp.Quantizations != nil {
			fmt.Fprintf(w, " quantizations=%s", list(dp.Quantizations))
		}
		if dp.MaxPriceIn != nil {
			fmt.Fprintf(w, " max_price.input=%g", *dp.MaxPriceIn)
		}
		if dp.MaxPriceOut != nil {
			fmt.Fprintf(w, " max_price.output=%g", *dp.MaxPriceOut)
		}
		if dp.Regions != nil {
			fmt.Fprintf(w, " regions=%s", list(dp.Regions))
		}
		fmt.Fprintln(w)
	}
	var keys []string
	for k := range e.Provenance {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s set by %s\n", k, e.Provenance[k])
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UPSTREAM\tMODEL\tCONNECTOR\tASKED\tOUTCOME\tDEGRADED\tDATA\tREGION")
	for _, c := range e.Compiled {
		outcome := "serve"
		if c.Refused != nil {
			outcome = "refuse: " + c.Refused.Code
		}
		model := c.Model
		if model == "" {
			model = e.DecidedModel
		}
		asked := c.Asked
		if c.Path != "" {
			asked += " " + c.Path
		}
		data := c.DataVia
		if data == "" {
			data = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Upstream, model, c.Connector, asked, outcome, list(c.Degraded), data, regionText(c.Region))
	}
	tw.Flush()
	fmt.Fprintln(w, "\n(--json shows each upstream's exact native body and every refusal message)")
}

// regionText is an upstream's REGION cell: where a direct upstream
// processes and its geography ("swedencentral (eu)"), "-" when unknown.
func regionText(region string) string {
	if region == "" {
		return "-"
	}
	if geo := profiles.Geography(region); geo != "" && geo != region {
		return region + " (" + geo + ")"
	}
	return region
}

func allowedText(a []string) string {
	if a == nil {
		return "(no restriction)"
	}
	return "[" + strings.Join(a, ", ") + "]"
}

// readRequest returns the request body explain compiles: the file (stdin
// for "-"), or a one-message request in the API's shape when there is none;
// model, when set, replaces the body's model.
func readRequest(env *cliEnv, file, model, api string) ([]byte, error) {
	var raw []byte
	var err error
	switch file {
	case "":
		switch api {
		case "messages":
			raw = []byte(`{"max_tokens": 1024, "messages": [{"role": "user", "content": "hello"}]}`)
		case "responses":
			raw = []byte(`{"input": "hello"}`)
		default:
			raw = []byte(`{"messages": [{"role": "user", "content": "hello"}]}`)
		}
	case "-":
		raw, err = io.ReadAll(env.stdin)
	default:
		raw, err = os.ReadFile(file)
	}
	if err != nil || model == "" {
		return raw, err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m, _ := json.Marshal(model)
	body["model"] = m
	return json.Marshal(body)
}
