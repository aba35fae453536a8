// Package sluice embeds the data files the binary ships with: the demo
// configuration that `sluice demo` serves, and the upstream error answers the
// simulator replays. The Go code lives in the pipeline's stages (profiles →
// guardrails → compiler → connectors → snapshot → gateway), the stores
// beside profiles (store/), the review tools on top (review/), the
// upstreams' test double (simulator/) and the binary that wires them
// (cmd/sluice); layout_test.go holds each room to its imports.
package sluice

import (
	"embed"
	"io/fs"
)

//go:embed testdata/demo/sluice.toml testdata/demo/catalog.json testdata/demo/profiles testdata/demo/guardrails
var demo embed.FS

//go:embed testdata/errors/*/*.json
var errorBodies embed.FS

//go:embed testdata/recorded/vertex/*.json testdata/recorded/vertex/*.sse
var vertexRecordings embed.FS

//go:embed testdata/recorded/realtime/*.jsonl
var realtimeSessions embed.FS

// DemoConfig returns the demo configuration directory (sluice.toml, catalog,
// profiles and guardrails) as a read-only file system.
func DemoConfig() fs.FS {
	sub, err := fs.Sub(demo, "testdata/demo")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}

// ErrorBodies returns the recorded upstream error answers, laid out as
// <upstream>/<name>.json.
func ErrorBodies() fs.FS {
	sub, err := fs.Sub(errorBodies, "testdata/errors")
	if err != nil {
		panic(err)
	}
	return sub
}

// VertexRecordings returns the recorded answers of Claude and Gemini on
// Google Vertex AI (testdata/recorded/vertex) that the simulator's Vertex endpoints
// replay: <name>.json and <name>.sse beside <name>.request.json.
func VertexRecordings() fs.FS {
	sub, err := fs.Sub(vertexRecordings, "testdata/recorded/vertex")
	if err != nil {
		panic(err)
	}
	return sub
}

// RealtimeSessions returns the recorded Realtime API sessions the simulator
// replays, one <name>.jsonl each: a line per frame, {"direction": "sent"
// or "received", "data": the event} (testdata/recorded/realtime).
func RealtimeSessions() fs.FS {
	sub, err := fs.Sub(realtimeSessions, "testdata/recorded/realtime")
	if err != nil {
		panic(err)
	}
	return sub
}
