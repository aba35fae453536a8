package chtest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicegw/sluice/gateway/requestlog/chtest"
)

func ping(t *testing.T, s *chtest.Server) error {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + s.HTTPAddr() + "/ping")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

func TestStartKillRestart(t *testing.T) {
	s := chtest.Start(t)
	require.NoError(t, ping(t, s))
	s.Kill()
	require.Error(t, ping(t, s), "server must be down after Kill")
	s.Restart()
	require.NoError(t, ping(t, s), "server must answer after Restart")
}
