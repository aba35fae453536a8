package errorbodies

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordingsAreWellFormed(t *testing.T) {
	recs, err := Load()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(recs), 28)
	for _, name := range Names(recs) {
		rec := recs[name]
		t.Run(name, func(t *testing.T) {
			assert.True(t, json.Valid(rec.Body), "body is JSON")
			assert.Contains(t, Classes, rec.Class)
			assert.True(t, strings.HasPrefix(rec.Source, "https://"), "source is a URL")
			assert.GreaterOrEqual(t, rec.Status, 400)
			assert.NotNil(t, rec.Categories, "categories present (may be empty)")
			switch rec.Class {
			case "throttled":
				assert.Contains(t, []int{429, 529}, rec.Status)
			case "timeout":
				assert.Contains(t, []int{408, 504}, rec.Status)
			case "server_error":
				assert.GreaterOrEqual(t, rec.Status, 500)
			case "unauthorized":
				assert.Contains(t, []int{401, 403}, rec.Status)
			case "refusal":
				assert.Contains(t, []int{400, 403, 422, 451}, rec.Status)
				assert.NotEmpty(t, rec.Categories)
			case "overflow", "client_error":
				assert.True(t, rec.Status >= 400 && rec.Status < 500)
			}
			for k := range rec.Headers {
				assert.Equal(t, strings.ToLower(k), k, "header names are lower-case")
			}
		})
	}
}

func TestRequiredRecordingsExist(t *testing.T) {
	recs, err := Load()
	require.NoError(t, err)
	want := map[string]string{
		"openai/content_policy_violation":    "refusal",
		"openai/context_length_exceeded":     "overflow",
		"openai/rate_limit_exceeded":         "throttled",
		"openai/invalid_api_key":             "unauthorized",
		"openai/server_error":                "server_error",
		"openai/model_not_found":             "client_error",
		"openai/invalid_request":             "client_error",
		"azure/content_filter":               "refusal",
		"azure/rate_limit":                   "throttled",
		"anthropic/invalid_request_error":    "client_error",
		"anthropic/authentication_error":     "unauthorized",
		"anthropic/permission_error":         "unauthorized",
		"anthropic/not_found_error":          "client_error",
		"anthropic/request_too_large":        "client_error",
		"anthropic/rate_limit_error":         "throttled",
		"anthropic/api_error":                "server_error",
		"anthropic/overloaded_error":         "throttled",
		"anthropic/prompt_too_long":          "overflow",
		"openrouter/bad_request":             "client_error",
		"openrouter/unauthorized":            "unauthorized",
		"openrouter/insufficient_credits":    "client_error",
		"openrouter/moderation":              "refusal",
		"openrouter/no_allowed_providers":    "client_error",
		"openrouter/timeout":                 "timeout",
		"openrouter/rate_limited":            "throttled",
		"openrouter/bad_gateway":             "server_error",
		"openrouter/no_available_provider":   "server_error",
		"openrouter/context_length_exceeded": "overflow",
	}
	for name, class := range want {
		rec, ok := recs[name]
		if assert.True(t, ok, name) {
			assert.Equal(t, class, rec.Class, name)
		}
	}
}

func TestAzureContentFilterNamesFilteredCategories(t *testing.T) {
	recs, err := Load()
	require.NoError(t, err)
	rec := recs["azure/content_filter"]
	var body struct {
		Error struct {
			Code       string `json:"code"`
			InnerError struct {
				Result map[string]struct {
					Filtered bool `json:"filtered"`
				} `json:"content_filter_result"`
			} `json:"innererror"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(rec.Body, &body))
	var filtered []string
	for k, v := range body.Error.InnerError.Result {
		if v.Filtered {
			filtered = append(filtered, k)
		}
	}
	slices.Sort(filtered)
	assert.Equal(t, []string{"hate", "violence"}, filtered)
	assert.Equal(t, append([]string{body.Error.Code}, filtered...), rec.Categories)
}
