package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEveryCodeHasAStatus(t *testing.T) {
	for code, status := range statuses {
		require.True(t, status >= 400 && status < 600, code)
	}
	require.Equal(t, http.StatusForbidden, Status(CodeModelForbidden))
	require.Equal(t, http.StatusUnprocessableEntity, Status(CodeProviderInexpressible))
	require.Equal(t, http.StatusInternalServerError, Status("no_such_code"))
}

func TestWriteOpenAIShape(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, &Error{Code: CodeRawRoutingField, Message: "no", Param: "/provider"})
	require.Equal(t, 400, rec.Code)
	var b struct {
		Error struct {
			Message, Type, Code string
			Param               *string
		}
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b))
	require.Equal(t, "raw_routing_field", b.Error.Code)
	require.Equal(t, "invalid_request_error", b.Error.Type)
	require.Equal(t, "/provider", *b.Error.Param)
}

// Retry-After goes with a rate_limited error in either API's shape.
func TestWriteRetryAfterInBothShapes(t *testing.T) {
	for name, write := range map[string]func(http.ResponseWriter, *Error){"openai": Write, "messages": WriteMessages} {
		rec := httptest.NewRecorder()
		write(rec, &Error{Code: CodeRateLimited, Message: "slow down", RetryAfter: 3})
		require.Equal(t, http.StatusTooManyRequests, rec.Code, name)
		require.Equal(t, "3", rec.Header().Get("Retry-After"), name)
	}
}

func TestFromHidesUnknownErrors(t *testing.T) {
	e := From(fmt.Errorf("wrapped: %w", New(CodeModelForbidden, "x")))
	require.Equal(t, CodeModelForbidden, e.Code)
	e = From(errors.New("dial tcp 10.0.0.1: secret detail"))
	require.Equal(t, CodeInternal, e.Code)
	require.NotContains(t, e.Message, "secret")
}
