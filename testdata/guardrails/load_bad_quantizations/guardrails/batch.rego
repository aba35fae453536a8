package sluice.guardrails

# A number where a set of precisions belongs: refused when the
# configuration loads, not answered 500 at request time.
quantizations := 42
