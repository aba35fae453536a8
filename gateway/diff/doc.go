// Package diff compares two configuration revisions the way a reviewer needs
// before a change to profiles or guardrails merges: it compiles every
// (key, model, upstream) combination under both and reports what changed.
//
// See docs/diff.md for the command (`sluice diff`), its exit codes and an
// example of each output form.
package diff
