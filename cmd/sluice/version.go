package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
)

// linkVersion and linkCommit are set at link time (-X) by deploy/build.sh
// from SLUICE_VERSION and SLUICE_COMMIT. They stand in only for what the
// build information lacks: an image built from a context without .git has
// no VCS stamp and its module version is "(devel)".
var (
	linkVersion string
	linkCommit  string
)

// versionInfo is what sluice version prints.
type versionInfo struct {
	// Version is the main module's version: a tag, a pseudo-version Go
	// derived from the commit, or "(devel)" when unknown.
	Version string `json:"version"`
	// Commit is the VCS revision, or "unknown".
	Commit string `json:"commit"`
	// Modified says whether the work tree had uncommitted changes; null when
	// the build recorded no VCS status.
	Modified *bool `json:"modified"`
	// CommitTime is the commit's time (RFC 3339), when recorded.
	CommitTime string `json:"commit_time,omitempty"`
	// Go is the toolchain that built the binary.
	Go string `json:"go"`
}

// buildVersion reads the running binary's build information.
func buildVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionFrom(bi, linkVersion, linkCommit)
}

// versionFrom assembles a versionInfo from build information (nil when the
// binary has none) and the link-time fallbacks.
func versionFrom(bi *debug.BuildInfo, version, commit string) versionInfo {
	v := versionInfo{Version: "(devel)", Commit: "unknown", Go: runtime.Version()}
	if bi != nil {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				m := s.Value == "true"
				v.Modified = &m
			}
		}
	}
	if v.Version == "(devel)" && version != "" {
		v.Version = version
	}
	if v.Commit == "unknown" && commit != "" {
		v.Commit = commit
	}
	return v
}

func runVersion(env *cliEnv, args []string) int {
	fs := newFlags(env, "version", "[--json]")
	asJSON := fs.Bool("json", false, "print JSON")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	v := buildVersion()
	if *asJSON {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(env.stdout, string(b))
		return 0
	}
	commit := v.Commit
	switch {
	case v.Modified == nil:
	case *v.Modified:
		commit += " (modified)"
	default:
		commit += " (clean)"
	}
	fmt.Fprintf(env.stdout, "sluice %s\ncommit %s\n", v.Version, commit)
	if v.CommitTime != "" {
		fmt.Fprintf(env.stdout, "time   %s\n", v.CommitTime)
	}
	fmt.Fprintf(env.stdout, "go     %s\n", v.Go)
	return 0
}
