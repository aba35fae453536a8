package simulator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAzureCredentials: the Azure endpoints answer only a request carrying
// the configured api-key (or a token the Entra endpoint issued): none, a
// wrong key and an unknown bearer are 401 in Azure's shape and recorded as
// such; the right key is served, and the content filter's refusal replays
// its recording.
func TestAzureCredentials(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ChunkDelay = 0
	cfg.AzureAPIKey = "az-key"
	s := startSim(t, cfg)
	url := s.URL(KindAzure) + "/chat/completions"
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for _, hdr := range [][]string{nil, {"api-key", "wrong"}, {"Authorization", "Bearer made-up"}} {
		r := post(t, url, body, hdr...)
		require.Equal(t, 401, r.status, "%v", hdr)
		assert.Contains(t, string(r.body), "Access denied due to invalid subscription key")
	}
	assert.Equal(t, 3, s.CallCount(CallFilter{Kind: KindAzure, Status: 401}))
	r := post(t, url, body, "api-key", "az-key")
	require.Equal(t, 200, r.status, "%s", r.body)
	m := r.json(t)
	assert.Contains(t, m, "prompt_filter_results")
	r = post(t, url, body, "api-key", "az-key", FaultHeader, "error=azure/content_filter")
	require.Equal(t, 400, r.status)
	assert.Contains(t, string(r.body), `"content_filter_result"`)
}
