// Package telemetry exports the gateway's traces over OTLP, configured by the
// standard OpenTelemetry environment, and is off — costing nothing — when
// that environment does not ask for it. The request path opens a server span
// per request and a client span per upstream attempt (see gateway/path.go),
// named and attributed after the OpenTelemetry GenAI semantic conventions
// with sluice's own attributes beside them.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables read besides the OTLP exporters' own
// (OTEL_EXPORTER_OTLP_*, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_RESOURCE_ATTRIBUTES), which the OpenTelemetry SDK reads itself.
const (
	// EnvCaptureContent set to "true" adds the request's messages and the
	// answer's choices to spans (gen_ai.input.messages and
	// gen_ai.output.messages). Default: never exported.
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// Tracing is the gateway's tracer: an OTLP exporter when the environment
// configures one, otherwise nothing at all (Enabled is false and the request
// path creates no span).
type Tracing struct {
	tracer  trace.Tracer
	tp      *sdktrace.TracerProvider
	content bool
	// Propagator reads the caller's W3C trace context and writes the
	// attempt's into upstream requests.
	Propagator propagation.TextMapPropagator
}

// Off is the tracer of a gateway that exports nothing.
var Off = &Tracing{}

// FromEnv configures tracing from the standard environment. It is on when
// an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or OTEL_TRACES_EXPORTER is "otlp";
// and off when neither is, when OTEL_TRACES_EXPORTER is "none", or when
// OTEL_SDK_DISABLED is "true". The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL: "grpc"
// or "http/protobuf" (the default). service.name defaults to "sluice"
// (OTEL_SERVICE_NAME overrides it); version becomes service.version.
func FromEnv(ctx context.Context, version string) (*Tracing, error) {
	if !enabled(os.Getenv) {
		return Off, nil
	}
	protocol := firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported (want grpc or http/protobuf)", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	name := os.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "sluice"
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(name), semconv.ServiceVersion(version)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{
		tracer:     tp.Tracer("github.com/sluicegw/sluice/gateway"),
		tp:         tp,
		content:    strings.EqualFold(os.Getenv(EnvCaptureContent), "true"),
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}, nil
}

// enabled reads the environment's switches (see [FromEnv]).
func enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return strings.ToLower(strings.TrimSpace(v))
		}
	}
	return ""
}

// Enabled reports whether spans are made and exported.
func (t *Tracing) Enabled() bool { return t.tp != nil }

// CaptureContent reports whether messages may be added to spans.
func (t *Tracing) CaptureContent() bool { return t.content }

// Tracer returns the gateway's tracer (only when Enabled).
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Extract returns ctx with the caller's trace context from the request's
// headers (W3C traceparent and tracestate, baggage).
func (t *Tracing) Extract(ctx context.Context, h http.Header) context.Context {
	return t.Propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes the trace context of ctx into an upstream request's headers.
func (t *Tracing) Inject(ctx context.Context, h http.Header) {
	t.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Shutdown flushes and stops the exporter within the context's deadline.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
