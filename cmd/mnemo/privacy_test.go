package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/memory"
)

// The markers of the privacy proofs: each is written to memory only by
// the scripted reflector (the secret is also in the DM that told it), so
// finding one in a request, a tool result or a post says which memory it
// came from.
const (
	privSecret   = "Codename-TANGERINE-7731" // told in Ada's DM: private
	privTeam     = "TeamFact-LILAC-2208"     // Ada's, learned in channel A: shared
	privDecision = "Decision-ORCHID-4419"    // channel A's own memory

	// privSearch finds each marker's entry by its words.
	privSearch = "codename TANGERINE team LILAC decision ORCHID release Friday"

	privSecretPath = "facts/secret.md"
	privMissing    = "facts/nosuch.md"
	privDecisions  = "channel/facts/decisions.md"
)

// privReader is a scripted model that reads whatever it is offered and
// says what it got, so that anything it is given shows up in its reply:
//
//   - the Thinker calls memory_list, then memory_read on every path the
//     list and the index named and on facts/secret.md and facts/nosuch.md
//     by name, and memory_search for the words of every marker, then
//     answers with every tool result it got;
//   - the reflector does the same reading, then writes what the USER said
//     (never what the assistant echoed): a secret codename told in a DM to
//     facts/secret.md, a team named in a channel to facts/team.md, a
//     decision to channel/facts/decisions.md.
func privReader(r openaitest.Request) (openaitest.Reply, bool) {
	msgs := r.Chat.Messages
	last := 0
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	tail := msgs[last+1:]
	step := 0
	for _, m := range tail {
		if m.Role == "assistant" {
			step++
		}
	}
	reflector := strings.Contains(r.System(), "memory reflector")
	switch {
	case step == 0 && len(r.Chat.Tools) == 0:
		return openaitest.Text("I was given no memory tools."), true
	case step == 0:
		return openaitest.ToolCalls(openaitest.Call("memory_list", `{}`)), true
	case step == 1:
		paths := append(privListed(tail), privIndexed(msgs)...)
		paths = append(paths, privSecretPath, privMissing)
		slices.Sort(paths)
		var calls []openaitest.ToolCall
		for _, p := range slices.Compact(paths) {
			calls = append(calls, openaitest.Call("memory_read", toolJSON(map[string]string{"path": p})))
		}
		// And it searches for every marker's words (never the marker
		// itself, so that only a result can carry one into a request).
		calls = append(calls, openaitest.Call("memory_search", toolJSON(map[string]string{"query": privSearch})))
		return openaitest.ToolCalls(calls...), true
	case !reflector:
		var b strings.Builder
		b.WriteString("I was given:")
		for _, res := range privResults(tail) {
			fmt.Fprintf(&b, "\n%s → %s", res.call, strings.Join(strings.Fields(res.text), " "))
		}
		return openaitest.Text(b.String()), true
	case step == 2:
		said := strings.Join(privSaid(r.LastUser()), "\n")
		var calls []openaitest.ToolCall
		write := func(path, content string) {
			calls = append(calls, openaitest.Call("memory_write", toolJSON(map[string]string{"path": path, "content": content})))
		}
		if strings.Contains(said, "my secret codename is "+privSecret) {
			write(privSecretPath, "# Secret\n\n> Summary: codename "+privSecret+"\n\n- Codename: "+privSecret+"\n")
		}
		if strings.Contains(said, "I'm on the platform team") {
			write("facts/team.md", "# Team\n\n> Summary: team "+privTeam+"\n\n- Team: platform ("+privTeam+")\n")
		}
		if strings.Contains(said, "we decided to ship on Friday") {
			write(privDecisions, "# Decisions\n\n> Summary: release "+privDecision+"\n\n- Release: ship on Friday ("+privDecision+")\n")
		}
		if len(calls) == 0 {
			return openaitest.Text("nothing to remember"), true
		}
		return openaitest.ToolCalls(calls...), true
	}
	return openaitest.Text("saved"), true
}

// privListed is the paths a memory_list result among msgs named.
func privListed(msgs []openaitest.Message) []string {
	var paths []string
	for _, res := range privResults(msgs) {
		var files []struct{ Path string }
		if strings.HasPrefix(res.call, "memory_list") && json.Unmarshal([]byte(res.text), &files) == nil {
			for _, f := range files {
				if f.Path != "" {
					paths = append(paths, f.Path)
				}
			}
		}
	}
	return paths
}

var privIndexLine = regexp.MustCompile(`(?m)^- (\S+\.md) \(`)

// privIndexed is the paths the memory index among msgs named.
func privIndexed(msgs []openaitest.Message) []string {
	var paths []string
	for _, m := range privIndexes(msgs) {
		for _, sm := range privIndexLine.FindAllStringSubmatch(m, -1) {
			paths = append(paths, sm[1])
		}
	}
	return paths
}

// privIndexes is the memory index messages among msgs.
func privIndexes(msgs []openaitest.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Available memory") {
			out = append(out, m.Content)
		}
	}
	return out
}

// privResult is one tool result: the call ("memory_read facts/x.md") and
// the text the model got.
type privResult struct{ call, text string }

// privResults pairs the tool results among msgs with their calls.
func privResults(msgs []openaitest.Message) []privResult {
	calls := map[string]string{}
	var out []privResult
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			var args struct{ Path string }
			json.Unmarshal([]byte(c.Function.Arguments), &args)
			calls[c.ID] = strings.TrimSpace(c.Function.Name + " " + args.Path)
		}
		if m.Role == "tool" {
			out = append(out, privResult{calls[m.ToolCallID], m.Content})
		}
	}
	return out
}

var privSaidRe = regexp.MustCompile("(?s)USER \\([^\n]*\\) said:\n```text\n(.*?)\n```")

// privSaid is what the USER blocks of a reflector's transcript hold.
func privSaid(transcript string) []string {
	var out []string
	for _, m := range privSaidRe.FindAllStringSubmatch(transcript, -1) {
		out = append(out, m[1])
	}
	return out
}

func privIsReflector(r openaitest.Request) bool {
	return strings.Contains(r.System(), "memory reflector")
}

// privChat drives one platform's fake for the proofs. People are "ada"
// and "bob"; places are "dm:ada", "dm:bob" and the channels "A" and "B".
type privChat interface {
	ready(t *testing.T, n int) // waits for the n-th connection since the fake started
	dm(who, text string)
	mention(who, where, text string)
	posts() []privPost
	waitPosts(n int, timeout time.Duration) error // waits until n messages were posted in all
	// leaks describes every call the bot made to the platform that
	// carries marker and goes anywhere but a DM.
	leaks(marker string) []string
	user(who string) string      // the memory user of a person
	channel(where string) string // the memory folder of a channel
	memoryKey() string           // "slack" or "discord": the config section
	close()
}

// privPost is one message the bot posted: where ("dm:ada", "A", …) and
// its text.
type privPost struct{ where, text string }

// privName turns a platform id back into its name in ids.
func privName(ids map[string]string, id string) string {
	for name, v := range ids {
		if v == id {
			return name
		}
	}
	return id
}

type privSlack struct{ srv *slacktest.Server }

var privSlackIDs = map[string]string{"ada": "U0ADA", "bob": "U0BOB", "dm:ada": "D0ADA", "dm:bob": "D0BOB", "A": "C0ALPHA", "B": "C0BRAVO"}

func newPrivSlack(t *testing.T, w *chatWorld) privChat {
	s := privSlack{w.fakeSlack(t, "xoxb-test", "xapp-test")}
	s.srv.SetUser(slacktest.User{ID: "U0ADA", Name: "ada", RealName: "Ada"})
	s.srv.SetUser(slacktest.User{ID: "U0BOB", Name: "bob", RealName: "Bob"})
	return s
}

func (s privSlack) ready(t *testing.T, n int) {
	t.Helper()
	if err := s.srv.WaitConnected(n, 20*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v", err)
	}
}

func (s privSlack) dm(who, text string) {
	s.srv.Message(slacktest.MessageEvent{Channel: privSlackIDs["dm:"+who], ChannelType: "im", User: privSlackIDs[who], Text: text})
}

func (s privSlack) mention(who, where, text string) {
	s.srv.AppMention(slacktest.AppMentionEvent{Channel: privSlackIDs[where], User: privSlackIDs[who], Text: "<@U0BOT> " + text})
}

// waitPosts waits for n replies (a streamed reply counts once it
// stopped); posts are the replies as they show now.
func (s privSlack) waitPosts(n int, timeout time.Duration) error {
	_, err := s.srv.WaitReplies(n, timeout)
	return err
}

func (s privSlack) posts() []privPost {
	var out []privPost
	for _, p := range s.srv.Replies() {
		out = append(out, privPost{privName(privSlackIDs, p.Channel), p.Text})
	}
	return out
}

func (s privSlack) leaks(marker string) []string {
	var out []string
	for _, c := range s.srv.Calls("") {
		ch := c.Params.Get("channel")
		if strings.HasPrefix(ch, "D") {
			continue
		}
		carries := strings.Contains(string(c.Body), marker)
		for _, vs := range c.Params {
			for _, v := range vs {
				carries = carries || strings.Contains(v, marker)
			}
		}
		if carries {
			out = append(out, fmt.Sprintf("%s to %q: %s", c.Method, ch, c.Body))
		}
	}
	return out
}

func (s privSlack) user(who string) string      { return "slack-T0TEAM-" + privSlackIDs[who] }
func (s privSlack) channel(where string) string { return "#slack-T0TEAM-" + privSlackIDs[where] }
func (s privSlack) memoryKey() string           { return "slack" }
func (s privSlack) close()                      { s.srv.Close() }

type privDiscord struct{ srv *discordtest.Server }

const privGuild = "330000000000000001"

var privDiscordIDs = map[string]string{
	"ada": "310000000000000001", "bob": "310000000000000002",
	"dm:ada": "320000000000000001", "dm:bob": "320000000000000002",
	"A": "340000000000000001", "B": "340000000000000002",
}

func newPrivDiscord(t *testing.T, w *chatWorld) privChat {
	d := privDiscord{w.fakeDiscord(t, discordtest.Options{})}
	for _, ch := range []string{"A", "B"} {
		d.srv.AddChannel(discordgo.Channel{ID: privDiscordIDs[ch], GuildID: privGuild, Name: "channel-" + ch, Type: discordgo.ChannelTypeGuildText})
	}
	return d
}

func (d privDiscord) ready(t *testing.T, n int) {
	t.Helper()
	if err := d.srv.WaitReady(n, 20*time.Second); err != nil {
		t.Fatalf("no Discord session: %v", err)
	}
}

func (d privDiscord) author(who string) *discordgo.User {
	return &discordgo.User{ID: privDiscordIDs[who], Username: who, GlobalName: strings.ToUpper(who[:1]) + who[1:]}
}

func (d privDiscord) dm(who, text string) {
	d.srv.MessageCreate(discordgo.Message{ChannelID: privDiscordIDs["dm:"+who], Author: d.author(who), Content: text})
}

func (d privDiscord) mention(who, where, text string) {
	bot := &discordgo.User{ID: discordtest.DefaultBotID, Username: discordtest.DefaultBotName, Bot: true}
	d.srv.MessageCreate(discordgo.Message{ChannelID: privDiscordIDs[where], GuildID: privGuild, Author: d.author(who),
		Content: "<@" + bot.ID + "> " + text, Mentions: []*discordgo.User{bot}})
}

func (d privDiscord) user(who string) string      { return "discord-" + privDiscordIDs[who] }
func (d privDiscord) channel(where string) string { return "#discord-" + privDiscordIDs[where] }
func (d privDiscord) memoryKey() string           { return "discord" }
func (d privDiscord) close()                      { d.srv.Close() }

func (d privDiscord) waitPosts(n int, timeout time.Duration) error {
	_, err := d.srv.WaitPosts(n, timeout)
	return err
}

func (d privDiscord) posts() []privPost {
	edited := map[string]string{} // a streamed reply is posted, then edited
	for _, e := range d.srv.MessageEdits() {
		edited[e.MessageID] = e.Message.Content
	}
	var out []privPost
	for _, p := range d.srv.Posts() {
		text, ok := edited[p.Message.ID]
		if !ok {
			text = p.Message.Content
		}
		out = append(out, privPost{privName(privDiscordIDs, p.ChannelID), text})
	}
	return out
}

func (d privDiscord) leaks(marker string) []string {
	var out []string
	for _, c := range d.srv.Calls("") {
		if strings.Contains(c.Path, "/channels/"+privDiscordIDs["dm:ada"]) || strings.Contains(c.Path, "/channels/"+privDiscordIDs["dm:bob"]) {
			continue
		}
		if strings.Contains(string(c.Body), marker) || strings.Contains(c.Query.Encode(), marker) {
			out = append(out, fmt.Sprintf("%s %s: %s", c.Method, c.Path, c.Body))
		}
	}
	return out
}

// privWorld is one platform's fake, the scripted model and a data folder,
// with `mnemo serve` running against them.
type privWorld struct {
	w      *chatWorld
	chat   privChat
	starts int
	logs   *syncWriter
	cancel context.CancelFunc
	done   chan int
}

// serve runs `mnemo serve` (run, as the binary does) with the given
// channelMemory setting, reflecting a conversation 1ms after it went
// quiet, until stop. The debug log says when the watcher saw a hand edit.
func (p *privWorld) serve(t *testing.T, channelMemory string) {
	t.Helper()
	// Replies whole (llm.stream: false): every proof reads the text a
	// reply shows once done, which a stream may not show yet when its
	// first post is there; streaming has its own tests.
	cfg := fmt.Sprintf("llm:\n  stream: false\nreflector:\n  idle: 1ms\nlog:\n  level: debug\n%s:\n  channelMemory: %q\n", p.chat.memoryKey(), channelMemory)
	if err := os.WriteFile(filepath.Join(p.w.dir, "mnemo.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.logs, p.cancel, p.done = &syncWriter{}, cancel, make(chan int, 1)
	logs, done := p.logs, p.done
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return p.w.env[k] }, strings.NewReader(""), io.Discard, logs)
		done <- exitCode(err, logs)
	}()
	t.Cleanup(func() { p.stop(t) })
	p.starts++
	p.chat.ready(t, p.starts)
	p.logs.waitLogged(t, 20*time.Second, "serve: running")
}

// stop sends SIGTERM and waits for serve to exit 0 (pending reflections
// are finished first).
func (p *privWorld) stop(t *testing.T) {
	t.Helper()
	if p.cancel == nil {
		return
	}
	p.cancel()
	p.cancel = nil
	if code := <-p.done; code != 0 {
		t.Errorf("serve exit %d after SIGTERM:\n%s", code, p.logs.String())
	}
}

// privTurn is one message and everything it caused.
type privTurn struct {
	who, where, text string
	reqs             []openaitest.Request // the model requests of its task, then of its reflection
	reply            string               // every message posted in answer
}

// say sends text from who in where, waits for the answer and, when
// reflected, for the reflection of the turn; the turn holds every model
// request made meanwhile.
func (p *privWorld) say(t *testing.T, who, where, text string, reflected bool) privTurn {
	t.Helper()
	before := len(p.w.srv.Requests())
	posted := len(p.chat.posts())
	reflections := strings.Count(p.logs.String(), "reflection: done")
	if strings.HasPrefix(where, "dm:") {
		p.chat.dm(who, text)
	} else {
		p.chat.mention(who, where, text)
	}
	if err := p.chat.waitPosts(posted+1, 20*time.Second); err != nil {
		t.Fatalf("no answer to %q from %s in %s: %v\n%s", text, who, where, err, p.logs.String())
	}
	if reflected {
		p.logs.waitFor(t, "reflection: done", reflections+1)
	}
	var reply []string
	for _, post := range p.chat.posts()[posted:] {
		if post.where != where {
			t.Fatalf("the answer to %q from %s in %s was posted in %s: %q", text, who, where, post.where, post.text)
		}
		reply = append(reply, post.text)
	}
	return privTurn{who: who, where: where, text: text, reqs: p.w.srv.Requests()[before:], reply: strings.Join(reply, "\n")}
}

func (tu privTurn) String() string { return fmt.Sprintf("%s in %s (%q)", tu.who, tu.where, tu.text) }

// thinker is the turn's task's model requests; reflector its reflection's.
func (tu privTurn) thinker() []openaitest.Request {
	return slices.DeleteFunc(slices.Clone(tu.reqs), privIsReflector)
}

func (tu privTurn) reflector() []openaitest.Request {
	return slices.DeleteFunc(slices.Clone(tu.reqs), func(r openaitest.Request) bool { return !privIsReflector(r) })
}

// index is the memory index the turn's task was given ("" for none).
func (tu privTurn) index() string {
	if th := tu.thinker(); len(th) > 0 {
		return strings.Join(privIndexes(th[0].Chat.Messages), "\n")
	}
	return ""
}

// privResultsOf maps each tool call of reqs ("memory_read facts/x.md") to what
// the model got.
func privResultsOf(reqs []openaitest.Request) map[string]string {
	out := map[string]string{}
	for _, r := range reqs {
		for _, res := range privResults(r.Chat.Messages) {
			out[res.call] = res.text
		}
	}
	return out
}

// absent fails for every request of the turn, and its reply, that holds
// marker.
func (tu privTurn) absent(t *testing.T, what, marker string) {
	t.Helper()
	for _, r := range tu.reqs {
		if strings.Contains(string(r.Body), marker) {
			role := "task"
			if privIsReflector(r) {
				role = "reflection"
			}
			t.Errorf("%s: %s reached the model in a request of the %s of %v:\n%s", what, marker, role, tu, r.Body)
		}
	}
	if strings.Contains(tu.reply, marker) {
		t.Errorf("%s: %s was posted in %s in answer to %v:\n%s", what, marker, tu.where, tu, tu.reply)
	}
}

// memFile is a memory file's text, "" when there is none.
func (p *privWorld) memFile(owner, rel string) string {
	b, _ := os.ReadFile(filepath.Join(p.w.dir, "data", "memory", owner, rel))
	return string(b)
}

// TestPrivacyEndToEnd: issue 20's proofs through `mnemo serve` against the
// fake Slack and the fake Discord, with a model that reads everything it
// is offered and repeats it:
//
//  1. a fact told in a DM reaches no model request of a channel task or a
//     channel reflection, and no channel post;
//  2. a private path and a missing one answer identically;
//  3. adding "> Visibility: shared" by hand makes a file available in a
//     channel at the next message;
//  4. a fact learned in a channel is written shared, and a DM sees it;
//  5. a decision told in channel A is recalled by another person in A, by
//     nobody in channel B or in a DM;
//  6. channelMemory: off sends no tools and no index, and the turn is not
//     reflected.
func TestPrivacyEndToEnd(t *testing.T) {
	for _, platform := range []struct {
		name  string
		start func(*testing.T, *chatWorld) privChat
	}{{"slack", newPrivSlack}, {"discord", newPrivDiscord}} {
		t.Run(platform.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			w := newChatWorld(t)
			w.srv.Handle(privReader)
			p := &privWorld{w: w, chat: platform.start(t, w)}
			privProofs(t, p)
			p.chat.close()
			w.srv.Close()
			goleak.VerifyNone(t, ignore)
		})
	}
}

func privProofs(t *testing.T, p *privWorld) {
	ada := p.chat.user("ada")
	chanA := p.chat.channel("A")
	p.serve(t, "read")

	// The secret is told in a DM and reflected into a private file.
	told := p.say(t, "ada", "dm:ada", "Between us: my secret codename is "+privSecret+".", true)
	if len(told.reflector()) == 0 {
		t.Fatalf("the DM was not reflected: %v", told)
	}
	secret := p.memFile(ada, privSecretPath)
	if !strings.Contains(secret, privSecret) || memory.IsShared(secret) {
		t.Fatalf("the DM's reflection did not write a private %s: %q\n%s", privSecretPath, secret, p.logs.String())
	}
	// Its line records where it was said: the DM, with the message's link.
	dmLink := ""
	for _, l := range strings.Split(secret, "\n") {
		if _, stamp := memory.SplitStamp(l); strings.Contains(l, privSecret) && stamp != "" {
			st, _ := memory.ParseStamp(stamp)
			if st.Surface == p.chat.memoryKey() && st.Place == "dm" && strings.HasPrefix(st.Link, "https://") {
				dmLink = st.Link
			}
		}
	}
	if dmLink == "" {
		t.Fatalf("the DM's fact has no provenance stamp with its link:\n%s", secret)
	}
	// The control: in a DM the model is given the secret, and repeats it.
	dm := p.say(t, "ada", "dm:ada", "What do you remember about me?", true)
	dm.absent(t, "a stamp (the model never sees one, even in the DM)", dmLink)
	if !strings.Contains(dm.index(), privSecretPath) || !strings.Contains(privResultsOf(dm.thinker())["memory_read "+privSecretPath], privSecret) ||
		!strings.Contains(privResultsOf(dm.thinker())["memory_search"], privSecret) || !strings.Contains(dm.reply, privSecret) {
		t.Fatalf("control: in her DM the model was not given Ada's secret (index %q), so the proofs below would prove nothing; reply:\n%s", dm.index(), dm.reply)
	}

	// Proofs 1 and 2: Ada asks in channel A.
	askA := p.say(t, "ada", "A", "what do you know about me?", true)
	t.Run("1_dm_fact_not_in_channel_task_or_reflection", func(t *testing.T) {
		if len(askA.thinker()) < 3 || len(askA.reflector()) < 3 {
			t.Fatalf("expected a task that listed and read, and a reflection that did too; got %d task and %d reflection requests", len(askA.thinker()), len(askA.reflector()))
		}
		if !strings.Contains(askA.reflector()[0].LastUser(), "This conversation was in a channel") {
			t.Errorf("the channel turn was not reflected as a channel's:\n%s", askA.reflector()[0].LastUser())
		}
		askA.absent(t, "proof 1", privSecret)
		askA.absent(t, "proof 1 (the path)", "secret.md\",\"summary")
		for role, reqs := range map[string][]openaitest.Request{"task": askA.thinker(), "reflection": askA.reflector()} {
			if res, ok := privResultsOf(reqs)["memory_search"]; !ok || strings.Contains(res, "secret") {
				t.Errorf("%s: the channel's memory_search answered %q (ok %v): a private file's path in it, or no search", role, res, ok)
			}
		}
		if strings.Contains(privResultsOf(askA.thinker())["memory_list"], "secret") || strings.Contains(askA.index(), "secret") {
			t.Errorf("the channel's index or memory_list names the private file: %q", askA.index())
		}
	})
	t.Run("2_private_path_answers_as_missing", func(t *testing.T) {
		for role, reqs := range map[string][]openaitest.Request{"task": askA.thinker(), "reflection": askA.reflector()} {
			res := privResultsOf(reqs)
			private, missing := res["memory_read "+privSecretPath], res["memory_read "+privMissing]
			if !strings.HasPrefix(missing, "error:") {
				t.Errorf("%s: memory_read %s answered %q, not an error", role, privMissing, missing)
			}
			if swapped := strings.ReplaceAll(missing, privMissing, privSecretPath); private != swapped {
				t.Errorf("%s: memory_read of a private path and of a missing one differ:\n private %q\n missing %q (names swapped)", role, private, swapped)
			}
		}
	})

	// Ada tells channel A a fact of hers and a decision of the channel.
	learned := p.say(t, "ada", "A", "I'm on the platform team, and we decided to ship on Friday.", true)
	learned.absent(t, "proof 1", privSecret)
	t.Run("4_channel_fact_is_shared", func(t *testing.T) {
		team := p.memFile(ada, "facts/team.shared.md")
		if !strings.Contains(team, privTeam) || !strings.Contains(team, "> Visibility: shared") || !memory.IsShared(team) {
			t.Errorf("the channel reflection's write is not a shared file: facts/team.shared.md = %q\n%s", team, p.logs.String())
		}
		if other := p.memFile(ada, "facts/team.md"); other != "" {
			t.Errorf("the channel reflection wrote a private-named file too: facts/team.md = %q", other)
		}
	})
	if got := p.memFile(chanA, "facts/decisions.md"); !strings.Contains(got, privDecision) {
		t.Fatalf("the channel reflection did not write channel A's decisions (%s/facts/decisions.md): %q\n%s", chanA, got, p.logs.String())
	}

	bobA := p.say(t, "bob", "A", "what did we decide?", true)
	bobB := p.say(t, "bob", "B", "what did we decide?", true)
	adaB := p.say(t, "ada", "B", "what do you know about me?", true)
	adaDM := p.say(t, "ada", "dm:ada", "what do you know about me now?", true)
	bobDM := p.say(t, "bob", "dm:bob", "what did we decide?", true)
	for _, tu := range []privTurn{bobA, bobB, adaB} {
		tu.absent(t, "proof 1", privSecret)
	}
	t.Run("1_no_channel_post_carries_the_dm_fact", func(t *testing.T) {
		for _, l := range p.chat.leaks(privSecret) {
			t.Errorf("a call to a channel carries the DM's secret: %s", l)
		}
	})
	t.Run("4_dm_sees_channel_fact", func(t *testing.T) {
		if !strings.Contains(adaDM.index(), "facts/team.shared.md") || !strings.Contains(privResultsOf(adaDM.thinker())["memory_read facts/team.shared.md"], privTeam) ||
			!strings.Contains(adaDM.reply, privTeam) {
			t.Errorf("Ada's DM does not see what she said in channel A: index %q, reply:\n%s", adaDM.index(), adaDM.reply)
		}
		if !strings.Contains(adaB.index(), "facts/team.shared.md") || !strings.Contains(adaB.reply, privTeam) {
			t.Errorf("Ada's shared fact is not seen in channel B: index %q", adaB.index())
		}
	})
	t.Run("5_decision_recalled_in_its_channel_only", func(t *testing.T) {
		if !strings.Contains(bobA.index(), privDecisions) || !strings.Contains(bobA.index(), privDecision) ||
			!strings.Contains(privResultsOf(bobA.thinker())["memory_read "+privDecisions], privDecision) || !strings.Contains(bobA.reply, privDecision) ||
			!strings.Contains(privResultsOf(bobA.thinker())["memory_search"], privDecisions) {
			t.Errorf("Bob in channel A does not recall channel A's decision: index %q, reply:\n%s", bobA.index(), bobA.reply)
		}
		bobA.absent(t, "Ada's shared fact is hers, not the channel's", privTeam)
		for _, tu := range []privTurn{bobB, adaB, adaDM, bobDM} {
			tu.absent(t, "proof 5", privDecision)
			if strings.Contains(tu.index(), privDecisions) {
				t.Errorf("proof 5: %v was offered %s: %q", tu, privDecisions, tu.index())
			}
		}
		for _, post := range p.chat.posts() {
			if post.where != "A" && strings.Contains(post.text, privDecision) {
				t.Errorf("proof 5: channel A's decision was posted in %s: %q", post.where, post.text)
			}
		}
		bobDM.absent(t, "proof 5 (Bob's DM)", privTeam)
		bobDM.absent(t, "proof 5 (Bob's DM)", privSecret)
	})

	t.Run("3_hand_edit_shares_at_next_message", func(t *testing.T) {
		file := filepath.Join(p.w.dir, "data", "memory", ada, privSecretPath)
		const seen = "memory: changed on disk; re-read at the next list"
		count := func() int {
			n := 0
			for _, l := range strings.Split(p.logs.String(), "\n") {
				if strings.Contains(l, seen) && strings.Contains(l, "user="+ada) && strings.Contains(l, "path="+privSecretPath) {
					n++
				}
			}
			return n
		}
		before := count()
		text := p.memFile(ada, privSecretPath)
		edited := strings.Replace(text, "> Summary: codename "+privSecret+"\n", "> Summary: codename "+privSecret+"\n> Visibility: shared\n", 1)
		if edited == text {
			t.Fatalf("cannot edit %q", text)
		}
		if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		// As an editor's save: the running serve's watcher notices it.
		waitUntil(t, "the watcher to see the edit", 20*time.Second, p.logs.Changed, func() bool { return count() > before })
		now := p.say(t, "ada", "A", "and what do you know about me now?", true)
		if !strings.Contains(now.index(), privSecretPath) || !strings.Contains(privResultsOf(now.thinker())["memory_read "+privSecretPath], privSecret) ||
			!strings.Contains(now.reply, privSecret) {
			t.Errorf("after '> Visibility: shared' was added by hand, channel A was not given the file: index %q, reply:\n%s", now.index(), now.reply)
		}
		// The file is shared now, its DM provenance is not: the link
		// reaches no channel request and no channel post.
		now.absent(t, "provenance of a DM fact", dmLink)
		for _, l := range p.chat.leaks(dmLink) {
			t.Errorf("a call to a channel carries the DM's link: %s", l)
		}
	})
	p.stop(t)

	t.Run("6_off_sends_no_tools_no_index_no_reflection", func(t *testing.T) {
		p.serve(t, "off")
		const question = "off-mode question: what do you know about me?"
		before := len(p.w.srv.Requests())
		off := p.say(t, "ada", "A", question, false)
		p.say(t, "ada", "dm:ada", "a DM after the off-mode question", true)
		p.stop(t) // SIGTERM reflects whatever is pending
		th := off.thinker()
		if len(th) != 1 {
			t.Fatalf("the off-mode task made %d model requests, want 1 (no tools to call)", len(th))
		}
		if tools := th[0].ToolNames(); len(tools) != 0 {
			t.Errorf("channelMemory off sent the tools %v", tools)
		}
		if idx := privIndexes(th[0].Chat.Messages); len(idx) != 0 || strings.Contains(string(th[0].Body), "Available memory") {
			t.Errorf("channelMemory off sent an index: %q", idx)
		}
		for _, m := range []string{privSecret, privTeam, privDecision} {
			off.absent(t, "proof 6", m)
		}
		if off.reply != "I was given no memory tools." {
			t.Errorf("off-mode reply %q", off.reply)
		}
		var reflected, controlled bool
		for _, r := range p.w.srv.Requests()[before:] {
			if privIsReflector(r) {
				reflected = reflected || strings.Contains(r.LastUser(), question)
				controlled = controlled || strings.Contains(r.LastUser(), "a DM after the off-mode question")
			}
		}
		if reflected {
			t.Error("the off-mode channel turn was reflected")
		}
		if !controlled {
			t.Error("control: the DM after it was not reflected, so the check above proves nothing")
		}
	})
}
