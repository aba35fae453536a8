// Package compiler turns a request, the principal's merged routing profile and
// their guardrail decision into a [Plan], and decides once, outside every
// connector, what each upstream can express of it: a preference that cannot be
// expressed degrades (and is recorded), a restriction that cannot be expressed
// refuses.
//
// The pipeline is profiles → guardrails → compiler → connectors → gateway; this
// package imports only the first two.
package compiler
