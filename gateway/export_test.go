package gateway

import "github.com/sluicegw/sluice/compiler/failover"

// TargetFailures is a route target's consecutive failures as this replica's
// planner sees them (tests).
func (s *Server) TargetFailures(route, upstream, model string) int {
	n, _ := s.planner.Health().Failures(failover.HealthKey{Route: route, Upstream: upstream, Model: model})
	return n
}

// WaitAudits waits for the reloads' audit entries being written (tests).
func (s *Server) WaitAudits() { s.audits.Wait() }
