package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway"
)

// TestBlindCallerKey: a caller key sent without naming its upstream is used
// on the upstream its shape names, as a configured caller key is (and the
// safety net applies to it the same way); a shape that names no upstream
// for certain is a 400 that reaches no upstream.
func TestBlindCallerKey(t *testing.T) {
	const blind = "sk-proj-blind-caller-key-0123456789"
	platform := "Bearer " + platformKeys["OPENAI_API_KEY"]
	for _, tc := range []struct {
		name, settings, key, fault string
		status                     int
		code                       string
		auths                      []string
		switched                   string
	}{
		{name: "used on the upstream it names", key: blind, status: 200, auths: []string{"Bearer " + blind}},
		{name: "its failure without the safety net is preserved", key: blind, fault: "status=503;times=1", status: 503,
			auths: []string{"Bearer " + blind}},
		{name: "the safety net retries the inferred upstream on the platform key", settings: "safety_net = true\nplan = \"pro\"\n",
			key: blind, fault: "error=openai/invalid_api_key;times=1", status: 200, auths: []string{"Bearer " + blind, platform}, switched: "safety_net"},
		{name: "a key of another upstream leaves this one on the platform key", key: "sk-ant-api03-elsewhere-0123456789", status: 200,
			auths: []string{platform}},
		{name: "a bare sk- key is ambiguous", key: "sk-0123456789abcdef", status: 400, code: "caller_key_unrecognized"},
		{name: "an unknown shape", key: "gw_0123456789abcdef", status: 400, code: "caller_key_unrecognized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, batchKey(tc.settings))
			hdr := []string{gateway.HeaderCallerKey, tc.key}
			if tc.fault != "" {
				hdr = append(hdr, "X-Sim-Fault", tc.fault)
			}
			resp, body := h.post(secretBatch, chatBody("openai/gpt-4o", ""), hdr...)
			require.Equal(t, tc.status, resp.StatusCode, string(body))
			var auths []string
			for _, s := range h.sent.take() {
				auths = append(auths, s.Auth)
			}
			require.Equal(t, tc.auths, auths)
			if tc.code != "" {
				var e errBody
				require.NoError(t, json.Unmarshal(body, &e))
				require.Equal(t, tc.code, e.Error.Code)
			} else {
				row := h.row(resp.Header.Get(gateway.HeaderRequestID))
				require.Equal(t, tc.switched, row.RoutingSwitchReason)
			}
			require.NotContains(t, string(body)+h.logs.String(), tc.key)
		})
	}
}
