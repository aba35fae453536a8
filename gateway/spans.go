package gateway

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicegw/sluice/connectors"
	"github.com/sluicegw/sluice/snapshot"
	"github.com/sluicegw/sluice/store/requestlog"
)

// The spans of the request path (when tracing is on, see gateway/telemetry):
// a server span per request, opened in begin and closed by record with the
// row's facts, and a client span per upstream attempt around its exchange.
// Attributes follow the OpenTelemetry GenAI semantic conventions, with
// sluice's own beside them.

// GenAI semantic-convention attribute keys.
const (
	attrOperation     = attribute.Key("gen_ai.operation.name")
	attrProvider      = attribute.Key("gen_ai.provider.name")
	attrRequestModel  = attribute.Key("gen_ai.request.model")
	attrResponseModel = attribute.Key("gen_ai.response.model")
	attrInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	// The usage's details, as the OpenTelemetry GenAI conventions name them.
	attrCachedTokens    = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	attrReasoningTokens = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	attrFinish          = attribute.Key("gen_ai.response.finish_reasons")
	attrInputMessages   = attribute.Key("gen_ai.input.messages")
	attrOutputMsgs      = attribute.Key("gen_ai.output.messages")
	attrErrorType       = attribute.Key("error.type")
	attrHTTPStatus      = attribute.Key("http.response.status_code")
)

// sluice's own attribute keys.
const (
	attrUpstream      = attribute.Key("sluice.upstream")
	attrRoute         = attribute.Key("sluice.route")
	attrSwitchReason  = attribute.Key("sluice.routing_switch_reason")
	attrDegraded      = attribute.Key("sluice.routing_degraded")
	attrFallback      = attribute.Key("sluice.fallback_reason")
	attrRefusedCode   = attribute.Key("sluice.refused_code")
	attrCacheHit      = attribute.Key("sluice.cache_hit")
	attrCostUSD       = attribute.Key("sluice.cost_usd")
	attrRequestID     = attribute.Key("sluice.request_id")
	attrConfigRev     = attribute.Key("sluice.config_revision")
	attrServedProvide = attribute.Key("sluice.served_provider")
)

// gen_ai.operation.name of the APIs: chat for chat completions and the
// Messages API alike, embeddings for embeddings.
const (
	opChat       = "chat"
	opEmbeddings = "embeddings"
)

// operation is the request's gen_ai.operation.name.
func (t *turn) operation() string {
	if t.api == connectors.APIEmbeddings {
		return opEmbeddings
	}
	return opChat
}

// maxContentAttr bounds a captured message attribute.
const maxContentAttr = 64 << 10

// startSpan opens the request's server span, a child of the caller's W3C
// trace context when it sent one.
func (s *Server) startSpan(r *http.Request, t *turn) {
	if !s.tracing.Enabled() {
		return
	}
	ctx := s.tracing.Extract(r.Context(), r.Header)
	op := t.operation()
	t.spanCtx, t.span = s.tracing.Tracer().Start(ctx, op, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(t.start), trace.WithAttributes(attrOperation.String(op), attrRequestID.String(t.id)))
}

// startAttemptSpan opens an attempt's client span; the exchange writes its
// trace context into the upstream request.
func (s *Server) startAttemptSpan(t *turn, a *attempt) {
	if t.span == nil {
		return
	}
	op, model := t.operation(), recorded(a.target.Model) // the caller's name, capped (bound.go)
	a.spanCtx, a.span = s.tracing.Tracer().Start(t.spanCtx, op+" "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrOperation.String(op), attrRequestModel.String(model),
			attrProvider.String(a.compiled.Upstream.Config.Connector), attrUpstream.String(a.target.Upstream)))
}

// endAttemptSpan closes an attempt's span with what came back.
func (s *Server) endAttemptSpan(a *attempt) {
	if a.span == nil {
		return
	}
	x := &a.out
	switch {
	case x.answered:
		res := x.result
		a.span.SetAttributes(attrResponseModel.String(res.ServedModel),
			attrInputTokens.Int64(res.Usage.PromptTokens), attrOutputTokens.Int64(res.Usage.CompletionTokens),
			attrCachedTokens.Int64(res.Usage.CachedTokens), attrReasoningTokens.Int64(res.Usage.ReasoningTokens))
		if res.FinishReason != "" {
			a.span.SetAttributes(attrFinish.StringSlice([]string{res.FinishReason}))
		}
		if res.StreamError != "" {
			a.span.SetAttributes(attrErrorType.String("stream_error"))
			a.span.SetStatus(codes.Error, "the upstream reported an error inside the stream")
		}
	case x.gone:
		a.span.SetAttributes(attrErrorType.String("client_gone"))
	case x.cut:
		a.span.SetAttributes(attrErrorType.String(x.apiErr.Code))
	default:
		a.span.SetAttributes(attrErrorType.String(x.failure.Class))
		if x.relay != nil {
			a.span.SetAttributes(attrHTTPStatus.Int(x.relay.status))
		}
		a.span.SetStatus(codes.Error, x.failure.String())
	}
	a.span.End()
}

// endSpan closes the request's server span with the row's facts.
func (s *Server) endSpan(t *turn, r *requestlog.Row) {
	if t.span == nil {
		return
	}
	sp := t.span
	if r.DecidedModel != "" {
		sp.SetName(t.operation() + " " + r.DecidedModel)
	}
	attrs := []attribute.KeyValue{
		attrRequestModel.String(r.DecidedModel), attrHTTPStatus.Int(r.Status),
		attrUpstream.String(r.Upstream), attrRoute.String(r.Route),
		attrSwitchReason.String(r.RoutingSwitchReason), attrDegraded.StringSlice(r.RoutingDegraded),
		attrFallback.String(r.FallbackReason), attrRefusedCode.String(r.RefusedCode),
		attrCacheHit.Bool(r.CacheHit), attrCostUSD.Float64(r.CostUSD), attrConfigRev.String(r.ConfigRevision),
	}
	if r.ServedModel != "" {
		attrs = append(attrs, attrResponseModel.String(r.ServedModel), attrProvider.String(r.ServedProvider),
			attrServedProvide.String(r.ServedProvider),
			attrInputTokens.Int64(r.PromptTokens), attrOutputTokens.Int64(r.CompletionTokens),
			attrCachedTokens.Int64(r.CachedTokens), attrReasoningTokens.Int64(r.ReasoningTokens))
	}
	if a := t.final; a != nil && a.out.answered && a.out.result.FinishReason != "" {
		attrs = append(attrs, attrFinish.StringSlice([]string{a.out.result.FinishReason}))
	}
	if et := errorType(r); et != "" {
		attrs = append(attrs, attrErrorType.String(et))
		sp.SetStatus(codes.Error, et)
	}
	if s.tracing.CaptureContent() && t.req != nil {
		attrs = append(attrs, attrInputMessages.String(bounded(snapshot.PromptOf(t.req.Body))))
		if a := t.final; a != nil && a.out.answered && a.out.body != nil {
			attrs = append(attrs, attrOutputMsgs.String(bounded(a.out.body)))
		}
	}
	sp.SetAttributes(attrs...)
	sp.End()
}

// errorType is error.type of a request that did not end well: the refusal
// code, else the failure class of the attempt it ended on, else its status.
func errorType(r *requestlog.Row) string {
	switch {
	case r.RefusedCode != "":
		return r.RefusedCode
	case r.Status >= 200 && r.Status < 300:
		return ""
	case r.Status == 499:
		return "client_gone"
	}
	return strconv.Itoa(r.Status)
}

// bounded returns a captured message attribute, cut to maxContentAttr.
func bounded(b []byte) string {
	if len(b) > maxContentAttr {
		b = b[:maxContentAttr]
	}
	return string(b)
}
