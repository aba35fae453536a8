package simulator

import (
	"fmt"
	"testing"
)

func TestZZScratch(t *testing.T) {
	s := startSim(t, DefaultConfig())
	tools := `"tools":[{"type":"function","function":{"name":"weather","parameters":{}}}]`
	msg := `"messages":[{"role":"user","content":"hi [[sim:call weather {\"location\": \"Florence\"}]]"}]`
	for _, k := range []string{KindOpenRouter, KindVercel, KindOpenAI} {
		r := post(t, s.URL(k)+"/chat/completions", `{"model":"openai/gpt-4o",`+tools+`,`+msg+`}`)
		fmt.Println(k, r.status, string(r.body))
		r = post(t, s.URL(k)+"/chat/completions", `{"model":"openai/gpt-4o","stream":true,`+tools+`,`+msg+`}`)
		fmt.Println(k, r.status, string(r.body)[:900])
	}
	r := post(t, s.URL(KindAnthropic)+"/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"tools":[{"name":"weather"}],"messages":[{"role":"user","content":"x [[sim:call weather {\"a\":1}]]"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"40 C"}]}]}`, "x-api-key", "k", "anthropic-version", "1")
	fmt.Println(r.status, string(r.body))
}
