package connectors

import (
	"slices"
	"strings"

	"github.com/sluicegw/sluice/compiler"
)

// The bedrock connector's pass-through of the Messages API: Bedrock serves
// Anthropic's models in the Messages API's own shape, so a Messages request
// goes with only what Bedrock's body asks for changed (see [bedrockBody]),
// and its answer or stream comes back as Bedrock sent it, read back by the
// readers the anthropic connector's pass-through uses.

// translateMessages implements [messagesNative]. The caller's
// anthropic-beta flags go in the body's anthropic_beta list, those Bedrock
// accepts ([bedrockBetas]) and the check did not drop (a "beta:<flag>"
// entry of the outcome's Degraded).
func (*bedrock) translateMessages(in *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	var betas []string
	for _, v := range in.Beta {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if _, ok := bedrockBetas[f]; ok && !slices.Contains(out.Degraded, "beta:"+f) && !slices.Contains(betas, f) {
				betas = append(betas, f)
			}
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
