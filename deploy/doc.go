// Package deploy holds how sluice is deployed: the build script the
// Dockerfile and CI share (build.sh), the compose file and its
// configuration directory (compose.yaml, config/), and the Helm chart
// (helm/sluice). It has no code; its tests check that the pieces agree
// with each other and with the binary: the chart renders with its probes,
// disruption budget, configuration mount and non-root settings, and the
// configuration each ships loads.
package deploy
