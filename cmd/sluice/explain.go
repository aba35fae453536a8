package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/sluicegw/sluice/profiles"
)

func runExplain(env *cliEnv, args []string) int {
	fs := newFlags(env, "explain", "--key KEY_ID [--config DIR] [--request FILE] [--json]")
	dir := fs.String("config", ".", "configuration directory")
	keyID := fs.String("key", "", "key id whose principal to explain (required)")
	reqFile := fs.String("request", "", "a request body (JSON) whose routing object is the request rung")
	asJSON := fs.Bool("json", false, "print a stable JSON object instead of text")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *keyID == "" {
		fmt.Fprintln(env.stderr, "sluice explain: --key is required")
		fs.Usage()
		return 2
	}
	cfg, diags := profiles.Load(*dir)
	if len(diags) > 0 {
		for _, d := range diags {
			fmt.Fprintln(env.stderr, d.String())
		}
		return 1
	}
	key := cfg.KeyByID(*keyID)
	if key == nil {
		fmt.Fprintf(env.stderr, "sluice explain: no key %q in %s\n", *keyID, profiles.ConfigFile)
		return 1
	}
	var request *profiles.Profile
	if *reqFile != "" {
		p, err := readRequestRouting(*reqFile)
		if err != nil {
			fmt.Fprintln(env.stderr, err)
			return 1
		}
		request = p
	}
	exp, merged := cfg.Explain(key, request)
	if *asJSON {
		b, _ := json.MarshalIndent(exp, "", "  ")
		fmt.Fprintln(env.stdout, string(b))
		return 0
	}
	p := exp.Principal
	fmt.Fprintf(env.stdout, "principal: org %s, team %s, project %s, key %s\n\n", p.Org, p.Team, p.Project, p.Key)
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tVALUE\tSET BY\tFILE")
	row := func(name string, set bool, value, rung, file string) {
		if !set {
			fmt.Fprintf(tw, "%s\t(unset)\t-\t-\n", name)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, value, rung, file)
	}
	list := func(f profiles.Field[[]string]) string { return "[" + strings.Join(f.Value, ", ") + "]" }
	row("fallbacks", merged.Fallbacks.Set, list(merged.Fallbacks), merged.Fallbacks.Rung, merged.Fallbacks.File)
	row("providers.rank_by", merged.RankBy.Set, merged.RankBy.Value, merged.RankBy.Rung, merged.RankBy.File)
	row("providers.preferred", merged.Preferred.Set, list(merged.Preferred), merged.Preferred.Rung, merged.Preferred.File)
	row("providers.allowed", merged.Allowed.Set, list(merged.Allowed), merged.Allowed.Rung, merged.Allowed.File)
	row("providers.denied", merged.Denied.Set, list(merged.Denied), merged.Denied.Rung, merged.Denied.File)
	tw.Flush()
	return 0
}

// readRequestRouting reads a request body file and returns its routing object
// (nil when absent), refusing an upstream's raw routing fields as the gateway does.
func readRequestRouting(path string) (*profiles.Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sluice explain: %w", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("%s: json_syntax: %v", path, err)
	}
	for _, f := range profiles.RawRoutingFields {
		if _, ok := body[f]; ok {
			return nil, fmt.Errorf("%s#/%s: raw_routing_field: %q is an upstream's own routing field; express routing with the \"routing\" object", path, f, f)
		}
	}
	raw, ok := body["routing"]
	if !ok {
		return nil, nil
	}
	p, diags := profiles.ParseRouting(raw)
	if len(diags) > 0 {
		for i := range diags {
			diags[i].File = path
		}
		return nil, diags
	}
	return p, nil
}
