package simulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/coder/websocket"

	sluice "github.com/sluicegw/sluice"
)

// OpenAI's Realtime API (GET /openai/v1/realtime, a WebSocket; Azure
// OpenAI's at the same path under <base>/azure, azure.go): a session
// replays one recorded session of testdata/recorded/realtime, frame for
// frame. On connect it sends the frames the upstream sent before the
// client's first one (session.created); then each client frame of type X
// moves the recording to its next frame the client sent with type X and
// sends what the upstream sent after it, up to the client's next frame. A
// client that sends the recorded frames in order gets the recorded session
// back; a frame of a type the recording has no more of gets nothing. Every
// frame the simulator sends is a recorded one, byte for byte as kept.

// APIRealtime is the Realtime API (…/realtime), as [Call.API] names it.
const APIRealtime = "realtime"

// RealtimeHeader names the recording a realtime session replays (a file
// name of testdata/recorded/realtime without .jsonl); default
// DefaultRealtimeRecording.
const RealtimeHeader = "X-Sim-Realtime"

// DefaultRealtimeRecording is the session OpenAI's endpoint replays
// without RealtimeHeader: a text conversation answered in text.
const DefaultRealtimeRecording = "openai-history-text-out"

// DefaultAzureRealtimeRecording is the session Azure's endpoint replays
// without RealtimeHeader: the same conversation, as Azure OpenAI answered
// it.
const DefaultAzureRealtimeRecording = "azure-history-text-out"

// recordedFrame is one frame of a recorded session.
type recordedFrame struct {
	sent bool   // the client sent it (else the upstream did)
	typ  string // the event's type
	data []byte // the event, as recorded
}

var (
	realtimeOnce sync.Once
	realtimeRecs map[string][]recordedFrame
	realtimeErr  error
)

// RealtimeRecordings returns the names of the recorded sessions, sorted.
func RealtimeRecordings() ([]string, error) {
	recs, err := loadRealtime()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(recs))
	for n := range recs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// loadRealtime reads the embedded recordings once.
func loadRealtime() (map[string][]recordedFrame, error) {
	realtimeOnce.Do(func() {
		fsys := sluice.RealtimeSessions()
		names, err := fs.Glob(fsys, "*.jsonl")
		if err != nil {
			realtimeErr = err
			return
		}
		realtimeRecs = map[string][]recordedFrame{}
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				realtimeErr = err
				return
			}
			frames, err := parseRecording(b)
			if err != nil {
				realtimeErr = fmt.Errorf("%s: %w", n, err)
				return
			}
			realtimeRecs[strings.TrimSuffix(path.Base(n), ".jsonl")] = frames
		}
	})
	return realtimeRecs, realtimeErr
}

// parseRecording reads a recording's lines.
func parseRecording(b []byte) ([]recordedFrame, error) {
	var out []recordedFrame
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var l struct {
			Direction string          `json:"direction"`
			Data      json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(l.Data, &ev); err != nil || ev.Type == "" {
			return nil, fmt.Errorf("line %d: an event without a type", line)
		}
		if l.Direction != "sent" && l.Direction != "received" {
			return nil, fmt.Errorf("line %d: direction %q", line, l.Direction)
		}
		out = append(out, recordedFrame{sent: l.Direction == "sent", typ: ev.Type, data: bytes.Clone(l.Data)})
	}
	return out, sc.Err()
}

// handleOpenAIRealtime serves one realtime session of OpenAI's.
func (s *Server) handleOpenAIRealtime(w http.ResponseWriter, r *http.Request) {
	s.serveRealtime(w, r, openAIDirect, DefaultRealtimeRecording)
}

// serveRealtime serves one realtime session of a direct provider: the
// model in the query is the provider's native id (for Azure, the
// deployment, named after its model), recorded under d.kind; rec is the
// recording replayed without [RealtimeHeader].
func (s *Server) serveRealtime(w http.ResponseWriter, r *http.Request, d direct, defaultRec string) {
	model := r.URL.Query().Get("model")
	m, ep, ok := s.directModel(model, d.provider)
	if !ok {
		s.record(r, Call{Kind: d.kind, Model: model, Status: http.StatusNotFound})
		writeJSON(w, http.StatusNotFound, openAINoModel(model))
		return
	}
	recs, err := loadRealtime()
	if err != nil {
		simError(w, http.StatusInternalServerError, err.Error())
		return
	}
	name := r.Header.Get(RealtimeHeader)
	if name == "" {
		name = defaultRec
	}
	rec, ok := recs[name]
	if !ok {
		simError(w, http.StatusBadRequest, "no recorded realtime session "+name)
		return
	}
	hdr, err := s.headerFaults(r)
	if err != nil {
		simError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, f := s.plan(hdr, m.Slug, ep.Slug()); f != nil && f.Action == FaultStatus {
		// A fault refuses the handshake with its status, in OpenAI's shape.
		s.record(r, Call{Kind: d.kind, Model: m.Slug, Provider: ep.Slug(), Status: f.Status, Fault: f.String()})
		writeJSON(w, f.Status, openAIShape(f.Status, "simulated failure"))
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	s.record(r, Call{Kind: d.kind, Model: m.Slug, Provider: ep.Slug(), Status: http.StatusSwitchingProtocols})
	c.SetReadLimit(16 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // the simulator's Close ends its sessions
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	replaySession(ctx, c, rec)
}

// replaySession replays rec on c until the client closes.
func replaySession(ctx context.Context, c *websocket.Conn, rec []recordedFrame) {
	i := 0
	emit := func() bool {
		for ; i < len(rec) && !rec[i].sent; i++ {
			if c.Write(ctx, websocket.MessageText, rec[i].data) != nil {
				return false
			}
		}
		return true
	}
	if !emit() {
		return
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != -1 {
				_ = c.Close(websocket.StatusNormalClosure, "")
			} else {
				_ = c.CloseNow()
			}
			return
		}
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &ev)
		j := i
		for ; j < len(rec) && !(rec[j].sent && rec[j].typ == ev.Type); j++ {
		}
		if j == len(rec) {
			continue // nothing more of this type recorded
		}
		i = j + 1
		if !emit() {
			return
		}
	}
}
