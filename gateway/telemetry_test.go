package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/gateway/telemetry"
)

// otlpReceiver collects the spans an OTLP exporter sends it, over HTTP
// (POST /v1/traces, protobuf) or gRPC (TraceService/Export).
type otlpReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func (rc *otlpReceiver) add(req *coltrace.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				rc.services = append(rc.services, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
}

// Export implements the OTLP gRPC trace service.
func (rc *otlpReceiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	rc.add(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// ServeHTTP implements OTLP/HTTP with protobuf bodies.
func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces, application/x-protobuf", http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.add(&req)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *otlpReceiver) snapshot() ([]*tracepb.Span, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...), append([]string(nil), rc.services...)
}

func attrs(s *tracepb.Span) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, a := range s.Attributes {
		m[a.Key] = a.Value
	}
	return m
}

// TestTracesReachAnOTLPReceiver: with the standard OTEL_* environment set,
// a request makes a server span and a client span per upstream attempt,
// attributed after the GenAI conventions and sluice's own, exported to a
// real OTLP receiver on loopback over HTTP and over gRPC; the caller's
// trace context is the parent, the attempt's reaches the upstream, and no
// message content is exported unless asked.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			rc := &otlpReceiver{}
			var endpoint string
			if protocol == "grpc" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				gs := grpc.NewServer()
				coltrace.RegisterTraceServiceServer(gs, rc)
				go func() { _ = gs.Serve(ln) }()
				t.Cleanup(gs.Stop)
				endpoint = "http://" + ln.Addr().String()
				t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
			} else {
				srv := httptest.NewServer(rc)
				t.Cleanup(srv.Close)
				endpoint = srv.URL
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_SERVICE_NAME", "sluice-test")
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
			tracing, err := telemetry.FromEnv(context.Background(), "v-test")
			require.NoError(t, err)
			require.True(t, tracing.Enabled())
			h := newHarnessOpts(t, nil, nil, func(o *gateway.Options) { o.Tracing = tracing })

			// The chain fires: the decided model fails, the marketplace walks on.
			const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			resp, body := h.post(secretChat, chatBody("openai/gpt-4o", `,"user":"traced"`), "traceparent", caller)
			require.Equal(t, 200, resp.StatusCode, string(body))
			sent := h.sent.take()
			require.Len(t, sent, 1)
			require.True(t, strings.HasPrefix(sent[0].Traceparent, "00-4bf92f3577b34da6a3ce929d0e0e4736-"), "the upstream request carries the caller's trace: %q", sent[0].Traceparent)
			require.NotEqual(t, caller, sent[0].Traceparent, "with the attempt's own span id")

			var server, client *tracepb.Span
			deadline := time.Now().Add(10 * time.Second)
			for server == nil || client == nil {
				require.False(t, time.Now().After(deadline), "no spans reached the receiver")
				time.Sleep(20 * time.Millisecond)
				spans, services := rc.snapshot()
				for _, s := range spans {
					switch s.Kind {
					case tracepb.Span_SPAN_KIND_SERVER:
						server = s
					case tracepb.Span_SPAN_KIND_CLIENT:
						client = s
					}
				}
				if len(services) > 0 {
					require.Equal(t, "sluice-test", services[0])
				}
			}
			require.Equal(t, "chat openai/gpt-4o", server.Name)
			require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", hexID(server.TraceId), "the caller's trace")
			require.Equal(t, "00f067aa0ba902b7", hexID(server.ParentSpanId), "the caller's span is the parent")
			require.Equal(t, server.SpanId, client.ParentSpanId, "the attempt is a child of the request")
			require.Contains(t, sent[0].Traceparent, hexID(client.SpanId), "the upstream sees the attempt's span")

			sa := attrs(server)
			require.Equal(t, "chat", sa["gen_ai.operation.name"].GetStringValue())
			require.Equal(t, "openai/gpt-4o", sa["gen_ai.request.model"].GetStringValue())
			require.Equal(t, "openai/gpt-4o", sa["gen_ai.response.model"].GetStringValue())
			require.Equal(t, "openai", sa["gen_ai.provider.name"].GetStringValue())
			require.Positive(t, sa["gen_ai.usage.input_tokens"].GetIntValue())
			require.Positive(t, sa["gen_ai.usage.output_tokens"].GetIntValue())
			require.Equal(t, "market", sa["sluice.upstream"].GetStringValue())
			require.Contains(t, sa, "sluice.routing_degraded")
			require.Contains(t, sa, "sluice.cost_usd")
			require.False(t, sa["sluice.cache_hit"].GetBoolValue())
			require.Equal(t, resp.Header.Get(gateway.HeaderRequestID), sa["sluice.request_id"].GetStringValue())
			require.NotContains(t, sa, "gen_ai.input.messages", "no content unless asked")
			require.Len(t, sa["gen_ai.response.finish_reasons"].GetArrayValue().GetValues(), 1)

			ca := attrs(client)
			require.Equal(t, "chat openai/gpt-4o", client.Name)
			require.Equal(t, "openrouter", ca["gen_ai.provider.name"].GetStringValue())
			require.Equal(t, "market", ca["sluice.upstream"].GetStringValue())
			require.Positive(t, ca["gen_ai.usage.output_tokens"].GetIntValue())
		})
	}
}

// TestTracesMarkRefusals: a refused request's span carries the refusal as
// error.type and sluice.refused_code, and makes no attempt span.
func TestTracesMarkRefusals(t *testing.T) {
	rc := &otlpReceiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	t.Setenv(telemetry.EnvCaptureContent, "true")
	tracing, err := telemetry.FromEnv(context.Background(), "v-test")
	require.NoError(t, err)
	h := newHarnessOpts(t, nil, nil, func(o *gateway.Options) { o.Tracing = tracing })
	resp, _ := h.post(secretChat, chatBody("x-ai/grok-4", ""))
	require.Equal(t, 403, resp.StatusCode)
	var server *tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for server == nil {
		require.False(t, time.Now().After(deadline), "no span reached the receiver")
		time.Sleep(20 * time.Millisecond)
		spans, _ := rc.snapshot()
		for _, s := range spans {
			require.NotEqual(t, tracepb.Span_SPAN_KIND_CLIENT, s.Kind, "a refused request makes no attempt")
			server = s
		}
	}
	sa := attrs(server)
	require.Equal(t, "model_forbidden", sa["error.type"].GetStringValue())
	require.Equal(t, "model_forbidden", sa["sluice.refused_code"].GetStringValue())
	require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, server.Status.Code)
	require.Contains(t, sa["gen_ai.input.messages"].GetStringValue(), "Hello there", "content is exported when asked")
}

// TestTracingOffByDefault: without an OTLP endpoint in the environment,
// tracing is off; OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn it
// off even with one; an unknown protocol is an error.
func TestTracingOffByDefault(t *testing.T) {
	for _, env := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
		t.Setenv(env, "")
	}
	tr, err := telemetry.FromEnv(context.Background(), "v")
	require.NoError(t, err)
	require.False(t, tr.Enabled())

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	tr, err = telemetry.FromEnv(context.Background(), "v")
	require.NoError(t, err)
	require.False(t, tr.Enabled())

	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	tr, err = telemetry.FromEnv(context.Background(), "v")
	require.NoError(t, err)
	require.False(t, tr.Enabled())

	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err = telemetry.FromEnv(context.Background(), "v")
	require.ErrorContains(t, err, "http/json")
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
