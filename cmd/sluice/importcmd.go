package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/state"
)

// runImport seeds the state store ([state]: SQLite in data_dir, or the
// fleet's PostgreSQL) with sluice.toml's routes, replacing the stored ones,
// in one transaction. An invalid configuration is refused
// before anything is written.
func runImport(env *cliEnv, args []string) int {
	fs := newFlags(env, "import", "[--config DIR]")
	dir := fs.String("config", ".", "configuration directory")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	snap, diags := snapshot.Load(*dir)
	if len(diags) > 0 {
		fmt.Fprintln(env.stdout, diags.Error())
		fmt.Fprintln(env.stderr, "sluice import: the configuration is invalid; nothing was written")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := state.Open(ctx, snap.Config)
	if err != nil {
		fmt.Fprintf(env.stderr, "sluice import: %v\n", err)
		return 1
	}
	defer st.Close()
	routes := snap.Config.Routes
	after, _ := json.Marshal(routes)
	if err := st.Replace(ctx, routes, state.AuditEntry{Actor: "import", Action: "import", After: after}); err != nil {
		fmt.Fprintf(env.stderr, "sluice import: %v\n", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "imported %d routes into %s\n", len(routes), st.Where())
	return 0
}

// storeDiffers reports (as a warning line) when a seeded state store holds
// routes other than the file's: the store is the source of truth, so the
// file's routes do not serve.
func storeDiffers(cfg *profiles.Config) string {
	path := filepath.Join(cfg.Store.DataDir, state.File)
	if cfg.State.Kind == "postgres" {
		path = "postgres"
	} else if _, err := os.Stat(path); err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Read only: a check never migrates a fleet's shared PostgreSQL.
	st, err := state.OpenToRead(ctx, cfg)
	if err != nil {
		return fmt.Sprintf("warning: the state store (%s) cannot be read: %v", path, err)
	}
	defer st.Close()
	if seeded, err := st.Seeded(ctx); err != nil || !seeded {
		return ""
	}
	stored, err := st.Routes(ctx)
	if err != nil {
		return fmt.Sprintf("warning: %s: %v", path, err)
	}
	if len(cfg.Routes) == 0 && len(stored) == 0 {
		return "" // nil and empty marshal differently, but agree
	}
	a, _ := json.Marshal(cfg.Routes)
	b, _ := json.Marshal(stored)
	if string(a) == string(b) {
		return ""
	}
	return fmt.Sprintf("warning: the routes in %s differ from sluice.toml's; the state store is their source of truth (edited through the admin API), so the file's routes do not serve. 'sluice import' replaces the stored routes with the file's.", path)
}
