package connectors

import (
	"github.com/sluicegw/sluice/compiler"
	"github.com/sluicegw/sluice/connectors/internal/jsonscan"
)

// The vercel connector's Messages API: the Vercel AI Gateway's
// Anthropic-shaped POST /v1/messages, which implements Anthropic's
// specification. Its documentation shows no routing member on this endpoint
// (testdata/recorded/ENDPOINTS.md), so none is sent: the expressibility
// check degrades the preferences (order, ranking) and refuses the
// restrictions (an allow-list, a model chain the gateway cannot walk
// itself is walked by sluice) as for any upstream without the knob. Its
// answer names no provider, so none is read back.

var _ messagesNative = (*vercel)(nil)

// messagesCapabilities implements [messagesNative]: no routing knob.
func (*vercel) messagesCapabilities() compiler.Capabilities { return compiler.Capabilities{} }

// translateMessages implements [messagesNative].
func (*vercel) translateMessages(_ *Inbound, body Body, _ *compiler.Plan, out *compiler.Outcome) (*Native, error) {
	return &Native{Path: "/messages", Header: withBeta(noHeaders, out), Body: encodeBody(body, member{"model", jsonscan.AppendString(nil, out.NativeModel)})}, nil
}

// messagesResponse implements [messagesNative].
func (*vercel) messagesResponse(_ *Call, body []byte) ([]byte, Result, error) {
	res, err := readMessageAnswer(body, "")
	if err != nil {
		return nil, res, err
	}
	readMessagesCost(jsonscan.Member(body, "usage"), &res)
	return body, res, nil
}

// newMessagesStream implements [messagesNative].
func (*vercel) newMessagesStream(*Call) Stream {
	return &anthRelay{read: newMsgReadBack("")}
}
