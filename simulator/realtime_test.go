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
// order, for every recording (a recording added is a check added): an
// azure-* recording through Azure's endpoint with its api-key, the others
// through OpenAI's. Azure's handshake without the key is refused 401.
func TestRealtimeReplaysRecordings(t *testing.T) {
	recs, err := loadRealtime()
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	cfg := testConfig()
	cfg.AzureAPIKey = "az-key"
	cfg.Models = append(cfg.Models, Model{Slug: "openai/gpt-realtime", ContextWindow: 32000,
		Endpoints: []Endpoint{{Provider: "openai", PriceIn: 4, PriceOut: 16}, {Provider: "azure", PriceIn: 4, PriceOut: 16}}})
	s := New(cfg)
	_, err = s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for name, rec := range recs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			kind, hdr := KindOpenAI, http.Header{RealtimeHeader: {name}}
			if strings.HasPrefix(name, "azure-") {
				kind, hdr["Api-Key"] = KindAzure, []string{"az-key"}
			}
			u := "ws" + strings.TrimPrefix(s.URL(kind), "http") + "/realtime?model=gpt-realtime"
			c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: hdr})
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
	require.Equal(t, 2, s.CallCount(CallFilter{API: APIRealtime, Kind: KindAzure}))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(s.URL(KindAzure), "http") + "/realtime?model=gpt-realtime"
	_, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Api-Key": {"wrong"}}})
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, 1, s.CallCount(CallFilter{API: APIRealtime, Kind: KindAzure, Status: http.StatusUnauthorized}))
}
