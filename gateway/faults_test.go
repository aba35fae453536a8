package gateway_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
	"github.com/sluicegw/sluice/simulator"
)

// faultRoutes: the same ordinary target, once with a restricted target that
// takes over every class and once with one that takes over none of them.
const faultRoutes = `
[[routes]]
model = "with-fallback"
limits = { retries = 1 }
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o"
[[routes.targets]]
upstream = "openai"
model = "openai/gpt-4o-mini"
takes_over = ["throttled", "timeout", "server_error", "connection", "overflow", "unauthorized", "refusal"]

[[routes]]
model = "without-fallback"
limits = { retries = 1 }
[[routes.targets]]
upstream = "market"
model = "openai/gpt-4o"
[[routes.targets]]
upstream = "openai"
model = "openai/gpt-4o-mini"
takes_over = ["refusal:nothing_sends_this"]
`

// failureClass is one class of failure the simulator can produce on the
// first target, with what the caller gets when nothing takes it over.
type failureClass struct {
	name   string
	fault  string // applied to the first target's model only
	reason string // fallback_reason when taken over
	alone  int    // HTTP status without a fallback
	final  bool   // never taken over (client_error)
}

var failureClasses = []failureClass{
	{"throttled", "status=429", "throttled", 429, false},
	{"timeout (504)", "status=504", "timeout", 504, false},
	{"timeout (first byte)", "headers_then_nothing", "timeout", 504, false},
	{"server_error", "status=500", "server_error", 500, false},
	{"server_error (garbage answer)", "garbage", "server_error", 502, false},
	{"server_error (10 MB error body)", "huge_error;status=500", "server_error", 502, false},
	{"connection", "cut_after=0", "connection", 502, false},
	{"overflow", "error=openai/context_length_exceeded", "overflow", 400, false},
	{"unauthorized", "error=openai/invalid_api_key", "unauthorized", 401, false},
	{"refusal", "error=openai/content_policy_violation", "refusal:content_policy_violation", 400, false},
	{"client_error", "error=openai/invalid_request", "", 400, true},
}

// TestFaultMatrix: every failure class × {non-streaming, streaming before
// the first chunk} × {a route with and without a matching fallback}. The
// client gets the documented result, exactly one row is recorded with the
// right fallback_reason and attempts, and the gateway makes no more upstream
// requests than the retry budget allows (attempts = upstream requests ≤ 2).
func TestFaultMatrix(t *testing.T) {
	h := newHarness(t,
		[2]string{"[cache]\nenabled = true", "[cache]\nenabled = false"},
		[2]string{"\n# The cheap model answers everything", faultRoutes + "\n# The cheap model answers everything"},
		// A loaded CI machine can take longer than the harness's 300 ms to
		// start a 10 MB body; only the headers_then_nothing cases should time out.
		[2]string{"name = \"market\"\nconnector = \"openrouter\"\nfirst_byte_timeout = \"1s\"", "name = \"market\"\nconnector = \"openrouter\"\nfirst_byte_timeout = \"1500ms\""})
	n := 0
	for _, fc := range failureClasses {
		for _, stream := range []bool{false, true} {
			for _, route := range []string{"with-fallback", "without-fallback"} {
				name := fmt.Sprintf("%s/stream=%t/%s", fc.name, stream, route)
				t.Run(name, func(t *testing.T) {
					n++
					extra := noChain + fmt.Sprintf(`,"user":"m%d"`, n)
					if stream {
						extra += `,"stream":true`
					}
					h.sim.Reset()
					h.sent.take()
					resp, body := h.post(secretChat, chatBody(route, extra), "X-Sim-Fault", fc.fault+";model=openai/gpt-4o")
					row := h.row(resp.Header.Get(gateway.HeaderRequestID))
					sent := h.sent.take()
					require.Equal(t, row.Attempts, len(sent), "one upstream request per recorded attempt")
					require.LessOrEqual(t, row.Attempts, 2, "the retry budget is 1")
					require.Equal(t, stream, row.Stream)
					takenOver := route == "with-fallback" && !fc.final
					if takenOver {
						require.Equal(t, 200, resp.StatusCode, string(body))
						require.Equal(t, 2, row.Attempts)
						require.Equal(t, fc.reason, row.FallbackReason)
						require.Equal(t, "openai/gpt-4o-mini", row.ServedModel)
						require.Equal(t, "target_fallback", row.RoutingSwitchReason)
						if stream {
							require.True(t, strings.HasSuffix(string(body), "data: [DONE]\n\n"))
							require.Empty(t, resp.Header.Get(gateway.HeaderFallback))
						} else {
							require.Equal(t, "true", resp.Header.Get(gateway.HeaderFallback))
						}
						return
					}
					require.Equal(t, fc.alone, resp.StatusCode, string(body))
					require.Equal(t, fc.alone, row.Status)
					require.Equal(t, 1, row.Attempts)
					require.Empty(t, row.FallbackReason)
					require.Empty(t, resp.Header.Get(gateway.HeaderFallback))
					require.NotContains(t, string(body), "data: ", "a failure before the first chunk is a plain HTTP error")
				})
			}
		}
	}
	// After the first chunk: whatever the failure, no switch.
	for _, fault := range []string{"cut_after=2", "stream_error_after=2"} {
		t.Run("after the first chunk/"+fault, func(t *testing.T) {
			h.sent.take()
			resp, body := h.post(secretChat, chatBody("with-fallback", noChain+`,"stream":true`), "X-Sim-Fault", fault+";model=openai/gpt-4o")
			require.Equal(t, 200, resp.StatusCode)
			require.NotContains(t, string(body), "[DONE]")
			require.Equal(t, 1, strings.Count(string(body), `"error":{`))
			row := h.row(resp.Header.Get(gateway.HeaderRequestID))
			require.Equal(t, 1, row.Attempts)
			require.Equal(t, 502, row.Status)
			require.Len(t, h.sent.take(), 1)
		})
	}
}

// TestSlowStreamHitsTotalDeadline: an endless slow stream is cut by the
// upstream's total deadline, in-band.
func TestSlowStreamHitsTotalDeadline(t *testing.T) {
	h := newHarness(t, [2]string{"name = \"openai\"\nconnector = \"openai\"\nfirst_byte_timeout = \"1s\"\ntimeout = \"3s\"\n", "name = \"openai\"\nconnector = \"openai\"\nfirst_byte_timeout = \"1s\"\ntimeout = \"700ms\"\n"})
	resp, body := h.post(secretBatch, chatBody("openai/gpt-4o", `,"stream":true`), "X-Sim-Fault", "slow_stream")
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(body), "upstream_stream_cut")
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 502, row.Status)
	require.GreaterOrEqual(t, row.LatencyMS, 650.0)
	require.Less(t, row.LatencyMS, 5000.0)
}

// TestStreamChunksReachCallerWhileUpstreamTrickles: chunks are flushed to the
// caller before the relay waits for the upstream, so a caller reads an
// endless slow stream's first chunks while it is still open and can hang up
// — the row then records the caller leaving (499), not the deadline's cut
// (502) that a relay holding chunks back would have reached first.
func TestStreamChunksReachCallerWhileUpstreamTrickles(t *testing.T) {
	h := newHarness(t)
	req, err := http.NewRequest(http.MethodPost, h.ts.URL+"/v1/chat/completions", strings.NewReader(chatBody("openai/gpt-4o", `,"stream":true`)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secretBatch)
	req.Header.Set("X-Sim-Fault", "slow_stream")
	resp, err := h.ts.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	for chunks := 0; chunks < 3; {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		require.NotContains(t, line, "upstream_stream_cut", "the chunks were held until the deadline")
		if strings.HasPrefix(line, "data: ") {
			chunks++
		}
	}
	require.NoError(t, resp.Body.Close())
	row := h.row(resp.Header.Get(gateway.HeaderRequestID))
	require.Equal(t, 499, row.Status)
}

// TestUpstreamConnectionsReused: a completed stream hands its upstream
// connection back to the pool (its body's last framing, sent apart from the
// final event, is drained after it) instead of closing it, as a
// non-streaming answer read to its end does; so every later request reuses
// a connection.
func TestUpstreamConnectionsReused(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := newHarnessSim(t, nil, func(c *simulator.Config) { c.StreamEndDelay = 5 * time.Millisecond })
			extra := ""
			if stream {
				extra = `,"stream":true`
			}
			for i := range 6 {
				// a different seed each time: no answer comes from the cache
				resp, body := h.post(secretBatch, chatBody("openai/gpt-4o", fmt.Sprintf(`%s,"seed":%d`, extra, i)))
				require.Equal(t, 200, resp.StatusCode, string(body))
				// The caller has its answer before the upstream's body ends:
				// the connection returns to the pool once the drain is done.
				require.Eventually(t, func() bool { return h.sent.pooled(i) }, 5*time.Second, 2*time.Millisecond,
					"request %d's upstream connection never went back to the pool", i)
			}
			sent := h.sent.take()
			require.Len(t, sent, 6)
			for i, r := range sent[1:] {
				require.True(t, r.Reused, "request %d opened a new upstream connection", i+1)
			}
		})
	}
}
