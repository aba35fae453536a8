package simulator

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Vertex AI's Gemini endpoints: generateContent and
// streamGenerateContent?alt=sse of the google publisher's models, bearer
// token checked as for Claude. The model the recordings were made with
// (gemini-2.5-flash) is answered from testdata/recorded/vertex (a tool
// result, tools, or a plain turn); any other model is not found, in Google
// APIs' error shape, as Vertex AI answers a model it does not serve.

// geminiRecorded is the Gemini model of the recordings.
const geminiRecorded = "gemini-2.5-flash"

// geminiMembers are the members of a generateContent body the simulator
// takes; Vertex AI refuses a member it does not know (400
// INVALID_ARGUMENT).
var geminiMembers = map[string]bool{
	"contents": true, "systemInstruction": true, "tools": true, "toolConfig": true,
	"generationConfig": true, "safetySettings": true, "cachedContent": true, "labels": true,
}

// geminiRequest is what the simulator reads of a generateContent body.
type geminiRequest struct {
	Contents []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"contents"`
	Tools json.RawMessage `json:"tools"`
}

func (v *Vertex) handleGemini(w http.ResponseWriter, r *http.Request) {
	if !v.authorized(w, r) {
		return
	}
	model, verb, _ := strings.Cut(r.PathValue("call"), ":")
	stream := verb == "streamGenerateContent"
	if !stream && verb != "generateContent" {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "method "+verb+" not found")
		return
	}
	if stream && r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse the stream is one JSON array, which no
		// recording holds.
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "the simulator streams server-sent events only (alt=sse)")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return
	}
	var members map[string]json.RawMessage
	var q geminiRequest
	if json.Unmarshal(body, &members) != nil || json.Unmarshal(body, &q) != nil {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	for k := range members {
		if !geminiMembers[k] {
			googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", `Invalid JSON payload received. Unknown name "`+k+`": Cannot find field.`)
			return
		}
	}
	if len(q.Contents) == 0 {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Unable to submit request because it has an empty contents field.")
		return
	}
	if model != geminiRecorded {
		googleError(w, http.StatusNotFound, "NOT_FOUND", "Publisher Model `"+r.URL.Path[:strings.LastIndex(r.URL.Path, ":")]+"` was not found or your project does not have access to it.")
		return
	}
	name := "plain"
	last := q.Contents[len(q.Contents)-1]
	switch {
	case len(last.Parts) > 0 && strings.Contains(string(last.Parts[0]), `"functionResponse"`):
		name = "toolresult"
	case len(q.Tools) > 0 && string(q.Tools) != "null":
		name = "tooluse"
	}
	name += "-gemini-2-5-flash"
	if stream {
		serveRecording(w, v.recs, "stream-"+name+".sse", "text/event-stream")
		return
	}
	serveRecording(w, v.recs, "nonstream-"+name+".json", "application/json; charset=UTF-8")
}
