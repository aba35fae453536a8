package gateway

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicegw/sluice/guardrails"
	"github.com/sluicegw/sluice/profiles"
)

// fileHashes are the configuration directory's files by their path below
// it (slash-separated), with a hash of each one's content.
type fileHashes map[string][sha256.Size]byte

// hashConfigFiles hashes the files a reload reads — sluice.toml,
// catalog.json and every file under profiles/ and guardrails/ (hidden ones
// left out, as the watcher leaves them) — so that a reload's log line can
// name the files that changed. A file that cannot be read is left out.
func hashConfigFiles(dir string) fileHashes {
	out := fileHashes{}
	add := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return
		}
		out[filepath.ToSlash(rel)] = sha256.Sum256(b)
	}
	add(filepath.Join(dir, profiles.ConfigFile))
	add(filepath.Join(dir, guardrails.CatalogFile))
	for _, sub := range configTrees {
		_ = filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case strings.HasPrefix(d.Name(), ".") && p != filepath.Join(dir, sub):
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			case d.IsDir():
				return nil
			}
			add(p)
			return nil
		})
	}
	return out
}

// changedFiles names the files that differ between two hashings: changed,
// added or removed, sorted.
func changedFiles(before, now fileHashes) []string {
	out := []string{}
	for name, h := range now {
		if old, ok := before[name]; !ok || old != h {
			out = append(out, name)
		}
	}
	for name := range before {
		if _, ok := now[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
