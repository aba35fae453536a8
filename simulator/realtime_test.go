package simulator

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// TestRealtimeReplaysRecordings: a client that sends a recorded session's
// frames gets the upstream's recorded frames back, byte for byte and in
// order, for every recording (a recording added is a check added).
func TestRealtimeReplaysRecordings(t *testing.T) {
	recs, err := loadRealtime()
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	cfg := testConfig()
	cfg.Models = append(cfg.Models, Model{Slug: "openai/gpt-realtime", ContextWindow: 32000, Endpoints: []Endpoint{{Provider: "openai", PriceIn: 4, PriceOut: 16}}})
	s := New(cfg)
	_, err = s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for name, rec := range recs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			u := "ws" + strings.TrimPrefix(s.URL(KindOpenAI), "http") + "/realtime?model=gpt-realtime"
			c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{RealtimeHeader: {name}}})
			require.NoError(t, err)
			defer c.CloseNow()
			c.SetReadLimit(16 << 20)
			var want [][]byte
			go func() {
				for _, f := range rec {
					if f.sent {
						_ = c.Write(ctx, websocket.MessageText, f.data)
					}
				}
			}()
			for _, f := range rec {
				if !f.sent {
					want = append(want, f.data)
				}
			}
			for i, w := range want {
				_, b, err := c.Read(ctx)
				require.NoError(t, err, "frame %d", i)
				require.True(t, bytes.Equal(w, b), "frame %d: got %s, want %s", i, b, w)
			}
			require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
		})
	}
	require.Equal(t, len(recs), s.CallCount(CallFilter{API: APIRealtime}))
}
