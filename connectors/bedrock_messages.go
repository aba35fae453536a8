package connectors

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The bedrock connector's pass-through of the Messages API: Bedrock serves
// Anthropic's models in the Messages API's own shape, so a Messages request
// goes with only what Bedrock's body asks for changed (see [bedrockBody]),
// and its answer or stream comes back as Bedrock sent it, read back by the
// readers the anthropic connector's pass-through uses.

// translateMessages implements [messagesNative]. The anthropic-beta flags
// the check kept ([compiler.Outcome.Betas]: those in [bedrockBetas]) go in
// the body's anthropic_beta list, each once.
func (*bedrock) translateMessages(_ *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	var betas []string
	for _, f := range out.Betas {
		if !slices.Contains(betas, f) {
			betas = append(betas, f)
		}
	}
	return &Native{Path: bedrockPath(out.NativeModel, isJSONTrue(body["stream"])), Header: noHeaders, Body: bedrockBody(body, betas)}, nil
}

// messagesResponse implements [messagesNative]: the answer is read back and
// returned as it came.
func (*bedrock) messagesResponse(call *Call, body []byte) ([]byte, Result, error) {
	res, err := readMessageAnswer(body, bedrockProvider)
	res.ServedModel = bedrockServed(call, res.ServedModel)
	if err != nil {
		return nil, res, err
	}
	return body, res, nil
}

// newMessagesStream implements [messagesNative]: each event relayed as a
// server-sent event, as Anthropic's own stream would carry it.
func (*bedrock) newMessagesStream(call *Call) Stream {
	return &bedrockStream{Stream: &anthRelay{read: newMsgReadBack(bedrockProvider)}, call: call}
}

// messagesCapabilities implements [messagesNative].
func (b *bedrock) messagesCapabilities() compiler.Capabilities { return b.Capabilities() }

// Bedrock counts a Messages request's tokens with its CountTokens
// operation (POST /model/{modelId}/count-tokens): the InvokeModel body,
// base64-encoded, in {"input": {"invokeModel": {"body": …}}}, answered
// {"inputTokens": n} (the request and answer shapes of the AWS SDK for
// Go's bedrockruntime CountTokens operation).
var (
	_ tokenCounter  = (*bedrock)(nil)
	_ countReshaper = (*bedrock)(nil)
)

// foreignErrors implements [foreignErrors]: Bedrock answers errors as
// {"message": …}, its type in the x-amzn-ErrorType header.
func (*bedrock) foreignErrors() {}

// countsTokens implements [tokenCounter].
func (*bedrock) countsTokens() {}

// translateCount implements [countReshaper]. The model is the foundation
// model's id, without an inference profile's region prefix (CountTokens
// names a model, not a profile). InvokeModel's body needs max_tokens,
// which a count request has none of: 1 is sent.
func (b *bedrock) translateCount(in *Inbound, body Body, plan *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	n, err := b.translateMessages(in, body, plan, out)
	if err != nil {
		return nil, err
	}
	if _, ok := body["max_tokens"]; !ok {
		msg, err := ParseBody(n.Body)
		if err != nil {
			return nil, err
		}
		msg["max_tokens"] = []byte("1")
		n.Body = encodeBody(msg)
	}
	var o object
	o.str("body", base64.StdEncoding.EncodeToString(n.Body))
	var input object
	input.raw("invokeModel", o.bytes())
	var top object
	top.raw("input", input.bytes())
	n.Body = top.bytes()
	n.Path = bedrockModelPath(bedrockFoundationModel(out.NativeModel), "/count-tokens")
	return n, nil
}

// countAnswer implements [countReshaper]: {"inputTokens": n} becomes the
// Messages API's {"input_tokens": n}.
func (*bedrock) countAnswer(body []byte) ([]byte, error) {
	n, ok := jsonInt(jsonscan.Member(body, "inputTokens"))
	if !ok {
		return nil, fmt.Errorf("bedrock: the token count has no inputTokens")
	}
	return append(strconv.AppendInt([]byte(`{"input_tokens":`), n, 10), '}'), nil
}

// bedrockFoundationModel is a model id without an inference profile's
// region prefix.
func bedrockFoundationModel(id string) string {
	for _, geo := range bedrockGeoPrefixes {
		if strings.HasPrefix(id, geo) {
			return id[len(geo):]
		}
	}
	return id
}
