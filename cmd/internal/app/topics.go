package app

// topicser is what has a person's topics (userdata.Service.Topics).
type topicser interface {
	Topics(user string, n int) (recent, facts []string, err error)
}

var _ topicser = (*Memory)(nil)

// Topics is what a person's suggested prompts in Slack's assistant threads
// are drawn from (userdata.Service.Topics): their own memory only.
func (m *Memory) Topics(user string, n int) (recent, facts []string, err error) {
	return m.svc.Topics(user, n)
}

// Topics is the Asker's Topics (the Slack adapter finds it on the memory
// it is given); none when the Asker has no such thing.
func (p PlatformMemory) Topics(user string, n int) (recent, facts []string, err error) {
	if t, ok := p.Asker.(topicser); ok {
		return t.Topics(user, n)
	}
	return nil, nil, nil
}
