package warm
import (
 _ "github.com/open-policy-agent/opa/v1/rego"
 _ "github.com/open-policy-agent/opa/v1/loader"
 _ "github.com/open-policy-agent/opa/v1/tester"
 _ "github.com/ClickHouse/clickhouse-go/v2"
 _ "modernc.org/sqlite"
 _ "github.com/go-chi/chi/v5"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/openai/openai-go/v3"
 _ "github.com/santhosh-tekuri/jsonschema/v5"
 _ "github.com/pelletier/go-toml/v2"
 _ "github.com/stretchr/testify/require"
)
