package budget

import "github.com/mnemo-agent/mnemo/agent/llm"

// MessageOverhead is the tokens counted for each message of a request
// besides its text (OpenAI's chat format spends 3 or 4 on the role and
// delimiters).
const MessageOverhead = 4

// Estimate is the tokens of text as mnemo counts them itself: its UTF-8
// bytes divided by 3, rounded up. English runs near 4 bytes a token and
// CJK near 3, so this counts high rather than low; it is an estimate for
// every model (each tokenizes its own way) and only used where the server
// reports no usage, and to size a reservation.
func Estimate(text string) int { return (len(text) + 2) / 3 }

// EstimateCall is what one model call cost by Estimate: every message's
// text, tool calls and names plus MessageOverhead each, and the tool
// definitions, for the prompt; the reply's text and tool calls for the
// completion.
func EstimateCall(req llm.Request, resp llm.Response) (prompt, completion int) {
	for _, m := range req.Messages {
		prompt += MessageOverhead + estimateMessage(m)
	}
	for _, t := range req.Tools {
		prompt += Estimate(t.Name) + Estimate(t.Description) + Estimate(string(t.Parameters))
	}
	return prompt, estimateMessage(resp.Message)
}

func estimateMessage(m llm.Message) int {
	n := Estimate(m.Content) + Estimate(m.Name) + Estimate(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += Estimate(c.ID) + Estimate(c.Name) + Estimate(c.Arguments)
	}
	return n
}
