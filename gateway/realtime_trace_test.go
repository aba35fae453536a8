package gateway_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/telemetry"
)

// TestRealtimeTraces: a session is a server span with a client span for
// its connect and one span per response, carrying that response's usage.
func TestRealtimeTraces(t *testing.T) {
	rc := &otlpReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	tracing, err := telemetry.FromEnv(context.Background(), "v-test")
	require.NoError(t, err)
	h := newHarnessOpts(t, nil, nil, func(o *gateway.Options) { o.Tracing = tracing })
	ctx, cancel := contextWithTimeout(20 * time.Second)
	defer cancel()
	c, _, err := h.dialRealtime(ctx, "model=gpt-realtime", bearer(secretBatch))
	require.NoError(t, err)
	until(ctx, t, c, "session.created")
	for _, f := range recordedSent(t, "openai-history-text-out") {
		require.NoError(t, c.Write(ctx, websocket.MessageText, f))
	}
	until(ctx, t, c, "response.done")
	require.NoError(t, c.Close(websocket.StatusNormalClosure, ""))
	var response *tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for response == nil {
		require.False(t, time.Now().After(deadline), "no response span reached the receiver")
		time.Sleep(20 * time.Millisecond)
		spans, _ := rc.snapshot()
		for _, s := range spans {
			if s.Name == "realtime.response openai/gpt-realtime" {
				response = s
			}
		}
	}
	a := attrs(response)
	require.Equal(t, int64(149), a["gen_ai.usage.input_tokens"].GetIntValue())
	require.Equal(t, int64(14), a["gen_ai.usage.output_tokens"].GetIntValue())
	require.InDelta(t, (149*4.0+14*16.0)/1e6, a["sluice.cost_usd"].GetDoubleValue(), 1e-12)
}
