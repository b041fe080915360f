// Package conformance is the one table of behaviours every chat platform
// must show, run against the platform's real client library talking to its
// fake (bots/slack/slacktest, bots/discord/discordtest): redelivery, resume
// after a restart, busy, split, the channel privacy policy, /memory,
// shutdown, access (a refused person), Remember this and attachments. A
// platform's test implements Driver (start its Bot against its fake; send
// a DM or a mention; deliver one again; read the posts; run /memory) and
// calls Run, which runs every row as a subtest.
package conformance

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/queue"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Wait bounds every wait of the table.
const Wait = 10 * time.Second

// Setup is how a row wants the bot started.
type Setup struct {
	IntakeDir     string // "": a memory-only journal
	ChannelMemory string // the platform's channelMemory setting ("" → its default)
	// Interrupted, when set, is journaled before the start as a DM whose
	// reply was being posted when the previous run stopped, with its first
	// Interrupted.Posted parts already on the platform (IntakeDir is set).
	Interrupted *Interrupted
	// Access, when set, makes the bot's access check (Config.Access) for
	// the platform, logging to log.
	Access func(platform string, log *slog.Logger) *access.Gate
	// Keeper, when set, is the bot's Remember this (Config.Keeper).
	Keeper platform.Keeper
	// AttachmentMaxBytes is the platform's attachments.maxBytes (0: files
	// are named, never read).
	AttachmentMaxBytes int
}

// Interrupted is a reply a crash interrupted.
type Interrupted struct {
	Text   string // the message
	Reply  string // the reply being posted
	Posted int    // parts of it already posted
	// Streamed, when set, says the reply was being streamed instead (no
	// reply decided; Reply and Posted unused): one message of the bot,
	// answering the message, shows Streamed, and the journal names it
	// as the reply's draft, unless Unjournaled (the crash came between
	// the post and its journal line).
	Streamed    string
	Unjournaled bool
}

// Driver starts one platform's Bot against its fake, for one test. The
// Bot is stopped when the test ends.
type Driver interface {
	Start(t *testing.T, s Setup) Bot
}

// Ref is a message sent to the bot.
type Ref any

// Post is a message the bot posted.
type Post struct {
	Text string
	To   Ref // the message it answers, or nil (a part after the first, or a reply not tied to one)
}

// Bot is a platform's Bot running against its fake.
type Bot interface {
	Handler() *bottest.Handler // the bot's handler
	Memory() *bottest.Memory   // its /memory backend
	// DM sends a direct message from the test's user; Mention a message in
	// a channel that addresses the bot. Both return once the fake sent it.
	DM(text string) Ref
	Mention(text string) Ref
	// Redeliver has the platform deliver m again, as it does after a lost
	// acknowledgement or a resumed session.
	Redeliver(m Ref)
	// Posts waits for the bot's first n posts and returns them in order.
	Posts(n int) []Post
	// Settle waits until every message sent so far is answered, and
	// returns every post so far.
	Settle() []Post
	// Parts is how the platform splits text into the parts of one reply,
	// and MaxRunes the most characters one part may have.
	Parts(text string) []string
	MaxRunes() int
	// ShowMemory runs /memory (show) as the test's user and returns the
	// answer's text; MemoryUser is that user's memory user name.
	ShowMemory() string
	MemoryUser() string
	// Draft is what the message of Interrupted.Streamed shows now.
	Draft() string
	// Shown waits until ok holds of what the bot's messages show now,
	// each as last edited, in the order they were posted, and returns
	// them (a streamed reply is posted, then edited).
	Shown(ok func([]Post) bool) []Post
	// Ready is the bot's Ready; Stop cancels Run and returns its result.
	Ready() bool
	Stop() error
}

// Row is one behaviour, and what of a platform it needs.
type Row struct {
	Name  string
	Run   func(t *testing.T, d Driver)
	Needs Feature
}

// Feature is something a row needs of a platform that not every platform
// has (the terminal, one person at a keyboard, has none of them).
type Feature int

// The features a row may need.
const (
	Redelivery  Feature = 1 << iota // the platform may deliver a message again
	Durable                         // its intake journal is on disk: a restart resumes
	QueueAhead                      // a conversation's messages may come before the earlier ones are answered
	Limit                           // a message has a length limit: long replies are split
	Channels                        // there are channels besides private conversations
	Access                          // who may talk is decided by access rules
	Keep                            // a person can ask to keep a message (Remember this: Keeping)
	Attachments                     // a person can attach files to a message (Attaching)
)

// why says why a row that needs a feature cannot apply to a platform
// without it.
var why = map[Feature]string{
	Redelivery:  "the platform never delivers a message twice (a terminal reads each line once)",
	Durable:     "the platform's intake journal is kept in memory: there is nothing to resume after a restart (a terminal's messages cannot be answered into a terminal that is gone)",
	QueueAhead:  "a person waits for each answer before sending the next message (a terminal's prompt comes back with the reply): a conversation never fills up",
	Limit:       "the platform has no length limit: a reply is one message, never split",
	Channels:    "the platform has no channels: every conversation is private, one person's",
	Access:      "the platform is the operator's own: no access rules apply (a terminal on the server)",
	Keep:        "the platform offers no way to point at a message and ask to keep it",
	Attachments: "a message is a line of text: there is no way to attach a file to it",
}

// Lacker is a Driver whose platform lacks some features (optional): the
// rows that need them are skipped, saying why.
type Lacker interface {
	Lacks() Feature
}

// Table is every row.
var Table = []Row{
	{"redelivery", redelivery, Redelivery | Durable},
	{"resume", resume, Durable | Limit},
	{"busy", busy, QueueAhead},
	{"split", splitReply, Limit},
	{"privacy policy", privacy, Channels},
	{"/memory", memoryCommand, 0},
	{"shutdown", shutdown, 0},
	{"stream", stream, 0},
	{"stream split", streamSplit, Limit},
	{"stream cut", streamCut, 0},
	{"stream resume", streamResume, Durable},
	{"access refused", accessRefused, Access},
	{"remember this", rememberThis, Keep},
	{"attachments", attachments, Attachments},
}

// Run runs every row of Table against d, each as a subtest; a row that
// needs what d's platform lacks (Lacker) is skipped with the reason.
func Run(t *testing.T, d Driver) {
	var lacks Feature
	if l, ok := d.(Lacker); ok {
		lacks = l.Lacks()
	}
	for _, r := range Table {
		t.Run(r.Name, func(t *testing.T) {
			if reason := skipReason(r.Needs & lacks); reason != "" {
				t.Skip(reason)
			}
			r.Run(t, d)
		})
	}
}

// skipReason says why a row that needs missing cannot apply ("" when
// nothing is missing): each missing feature's reason.
func skipReason(missing Feature) string {
	var reasons []string
	for f := Redelivery; f <= Attachments; f <<= 1 {
		if missing&f != 0 {
			reasons = append(reasons, why[f])
		}
	}
	return strings.Join(reasons, "; ")
}

// accessRefused: with pairing, a stranger gets one reply with a code,
// then none within the hour, and never a task; /memory answers them the
// refusal and shows no memory; once the code is approved they are
// answered.
func accessRefused(t *testing.T, d Driver) {
	store, err := access.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan struct{}, 100)
	b := d.Start(t, Setup{Access: func(platform string, log *slog.Logger) *access.Gate {
		return access.NewGate(access.GateOptions{Platform: platform, Policy: access.Policy{Mode: access.Pairing}, Store: store, Log: log,
			Refused: func(string, string) { refused <- struct{}{} }})
	}})
	b.DM("hello")
	if p := b.Posts(1); !strings.Contains(p[0].Text, "I don't know you yet") {
		t.Fatalf("refusal %+v", p[0])
	}
	_, codes := store.List(time.Now())
	if len(codes) != 1 {
		t.Fatalf("codes %+v", codes)
	}
	code := codes[0].Code
	b.DM("hello again")
	b.Mention("and here")
	for range 3 {
		select {
		case <-refused:
		case <-time.After(Wait):
			t.Fatal("the messages were not refused")
		}
	}
	if text := b.ShowMemory(); !strings.Contains(text, code) || len(b.Memory().Shown()) != 0 {
		t.Fatalf("/memory: %q; shown %v", text, b.Memory().Shown())
	}
	if _, err := store.Approve(code, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.DM("welcome")
	posts := b.Settle()
	told := 0
	for _, p := range posts {
		if p.To != nil && strings.Contains(p.Text, "I don't know you yet") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("told %d times: %+v", told, posts)
	}
	if countText(posts, "echo: welcome") != 1 {
		t.Errorf("not answered once let in: %+v", posts)
	}
	for _, text := range []string{"hello", "hello again", "and here"} {
		if n := countTasks(b.Handler(), text); n != 0 {
			t.Errorf("%q became a task", text)
		}
	}
}

// redelivery: a message delivered again is answered once.
func redelivery(t *testing.T, d Driver) {
	b := d.Start(t, Setup{IntakeDir: t.TempDir()})
	m := b.DM("once")
	b.Posts(1)
	b.Redeliver(m)
	b.Redeliver(m)
	posts := b.Settle()
	if n := countText(posts, "echo: once"); n != 1 {
		t.Errorf("answered %d times: %+v", n, posts)
	}
	if n := countTasks(b.Handler(), "once"); n != 1 {
		t.Errorf("%d tasks for one message", n)
	}
}

// resume: a reply a crash interrupted is finished after the restart
// without posting again the parts the platform shows already, and the
// message is not answered again.
func resume(t *testing.T, d Driver) {
	reply := strings.Repeat("alpha ", 400) + "\n\n" + strings.Repeat("beta ", 400) + "\n\n" + strings.Repeat("gamma ", 400)
	b := d.Start(t, Setup{IntakeDir: t.TempDir(), Interrupted: &Interrupted{Text: "question", Reply: reply, Posted: 1}})
	parts := b.Parts(reply)
	if len(parts) < 2 {
		t.Fatalf("the reply is %d parts; the row needs 2 or more", len(parts))
	}
	posts := b.Settle()
	var got []string
	for _, p := range posts {
		if p.Text != "echo: settle" {
			got = append(got, p.Text)
		}
	}
	if !slices.Equal(got, parts[1:]) {
		t.Errorf("posted after the restart %q; want the parts not posted yet %q", got, parts[1:])
	}
	if n := countTasks(b.Handler(), "question"); n != 0 {
		t.Errorf("the interrupted message was answered again (%d tasks)", n)
	}
}

// busy: a conversation holds at most queue.PerConversation messages; one
// more is answered at once that the bot is busy, and the others are
// answered in order once the handler is free.
func busy(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	release := b.Handler().Hold()
	var texts []string
	for i := range queue.PerConversation + 1 {
		texts = append(texts, "m"+string(rune('a'+i)))
	}
	b.DM(texts[0])
	b.Handler().WaitTasks(t, 1, Wait)
	for _, s := range texts[1:] {
		b.DM(s)
	}
	if p := b.Posts(1)[0]; p.Text != pipeline.BusyReplyText {
		t.Fatalf("first post %q; want the busy reply", p.Text)
	}
	release()
	posts := b.Posts(queue.PerConversation + 1)
	var answers []string
	for _, p := range posts[1:] {
		answers = append(answers, strings.TrimPrefix(p.Text, "echo: "))
	}
	if !slices.Equal(answers, texts[:queue.PerConversation]) {
		t.Errorf("answered %q; want %q in order", answers, texts[:queue.PerConversation])
	}
}

// splitReply: a reply longer than one message is posted in parts, each within
// the platform's limit, the first one answering the message.
func splitReply(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	long := strings.Repeat("word ", b.MaxRunes()/5) + "\n\n" + strings.Repeat("more ", b.MaxRunes()/5)
	b.Handler().SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: long}, nil })
	m := b.DM("long please")
	want := b.Parts(long)
	if len(want) < 2 {
		t.Fatalf("%d parts; the row needs 2 or more", len(want))
	}
	posts := b.Posts(len(want))
	for i, p := range posts {
		if p.Text != want[i] {
			t.Errorf("part %d is %q; want %q", i, p.Text, want[i])
		}
		if n := len([]rune(p.Text)); n > b.MaxRunes() {
			t.Errorf("part %d has %d characters, above %d", i, n, b.MaxRunes())
		}
	}
	if posts[0].To != m {
		t.Errorf("the first part answers %v; want %v", posts[0].To, m)
	}
	b.Handler().SetReply(nil)
	if extra := b.Settle(); len(extra) != len(want)+1 { // + settle's answer
		t.Errorf("%d posts; want %d: %+v", len(extra), len(want)+1, extra)
	}
}

// privacy: channelMemory (off, read, full; read by default) reaches the
// task of a message in a channel; a DM is private, its memory full.
func privacy(t *testing.T, d Driver) {
	for _, setting := range []string{"", mnemo.ChannelMemoryOff, mnemo.ChannelMemoryRead, mnemo.ChannelMemoryFull} {
		t.Run("channelMemory="+setting, func(t *testing.T) {
			b := d.Start(t, Setup{ChannelMemory: setting})
			b.Mention("in the channel")
			b.Posts(1)
			b.DM("in private")
			b.Posts(2)
			tasks := b.Handler().Tasks()
			want := setting
			if want == "" {
				want = mnemo.ChannelMemoryRead
			}
			if c := tasks[0]; !c.Channel || c.ChannelMemory != want || c.ChannelKey == "" {
				t.Errorf("channel task: Channel %v, ChannelMemory %q, ChannelKey %q; want a channel with %q",
					c.Channel, c.ChannelMemory, c.ChannelKey, want)
			}
			if dm := tasks[1]; dm.Channel || dm.ChannelMemory != mnemo.ChannelMemoryFull || dm.ChannelKey != "" {
				t.Errorf("DM task: Channel %v, ChannelMemory %q, ChannelKey %q", dm.Channel, dm.ChannelMemory, dm.ChannelKey)
			}
		})
	}
}

// memoryCommand: /memory shows the user what is remembered about them,
// asked of the memory by their memory user name.
func memoryCommand(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	b.Memory().ShowText = "What I remember about you:\n\n- facts/food.md (12B): likes ramen"
	if got := b.ShowMemory(); !strings.Contains(got, "facts/food.md") || !strings.Contains(got, "likes ramen") {
		t.Errorf("/memory answered %q", got)
	}
	if got := b.Memory().Shown(); !slices.Equal(got, []string{b.MemoryUser()}) {
		t.Errorf("shown %q; want %q", got, b.MemoryUser())
	}
}

// shutdown: a message taken before shutdown is answered before Run
// returns, and Run returns nil.
func shutdown(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	release := b.Handler().Hold()
	b.DM("slow")
	b.Handler().WaitTasks(t, 1, Wait)
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop() }()
	bottest.WaitFor(t, "the stop to begin", Wait, func() bool { return !b.Ready() })
	release()
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if posts := b.Posts(1); posts[0].Text != "echo: slow" {
		t.Errorf("posts %+v", posts)
	}
}

func countText(posts []Post, text string) int {
	n := 0
	for _, p := range posts {
		if p.Text == text {
			n++
		}
	}
	return n
}

func countTasks(h *bottest.Handler, text string) int {
	n := 0
	for _, t := range h.Tasks() {
		if t.Text == text {
			n++
		}
	}
	return n
}

// streamer is a handler's reply that streams: it sends each of deltas to
// the task's stream, waiting before each for the test (next), and
// answers with what it sent (Cut: as a reply that broke off).
type streamer struct {
	next chan struct{}
	cut  bool
}

func (s streamer) reply(deltas ...string) func(mnemo.Task) (mnemo.Reply, error) {
	return func(task mnemo.Task) (mnemo.Reply, error) {
		var all strings.Builder
		for _, d := range deltas {
			<-s.next
			all.WriteString(d)
			task.Stream.Text(d)
		}
		<-s.next
		return mnemo.Reply{Text: all.String(), Streamed: true, Cut: s.cut, Failed: s.cut}, nil
	}
}

// texts is what posts show.
func texts(posts []Post) []string {
	out := make([]string, len(posts))
	for i, p := range posts {
		out[i] = p.Text
	}
	return out
}

// stream: the first words of a streamed reply are shown while the model
// still writes; the complete reply ends up shown exactly once, in as many
// messages as Parts makes, the first answering the message.
func stream(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	s := streamer{next: make(chan struct{})}
	b.Handler().SetReply(s.reply("Hello", " there,", " and welcome."))
	m := b.DM("hi")
	s.next <- struct{}{}
	first := b.Shown(func(ps []Post) bool { return len(ps) == 1 && ps[0].Text != "" })
	if !strings.HasPrefix("Hello there, and welcome.", strings.TrimSpace(first[0].Text)) {
		t.Errorf("first words %q", first[0].Text)
	}
	if first[0].To != m {
		t.Errorf("the first message answers %v; want %v", first[0].To, m)
	}
	s.next <- struct{}{}
	s.next <- struct{}{}
	s.next <- struct{}{} // the handler returns
	want := b.Parts("Hello there, and welcome.")
	b.Shown(func(ps []Post) bool { return slices.Equal(texts(ps), want) })
	b.Handler().SetReply(nil)
	if got := texts(b.Settle()); !slices.Equal(got, append(want, "echo: settle")) {
		t.Errorf("messages %q; want %q and the settle answer", got, want)
	}
}

// streamSplit: a streamed reply past the platform's limit continues in a
// new message while it is written; in the end every message is a part
// of the reply as Parts splits it, within the limit, each shown once.
func streamSplit(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	s := streamer{next: make(chan struct{})}
	para := strings.Repeat("word ", b.MaxRunes()/10)
	deltas := []string{para, para, "\n\n" + para, para, "\n\n" + para, para}
	full := strings.Join(deltas, "")
	b.Handler().SetReply(s.reply(deltas...))
	b.DM("long please")
	for range deltas[:4] {
		s.next <- struct{}{}
	}
	b.Shown(func(ps []Post) bool { return len(ps) >= 2 }) // split while written
	for range deltas[4:] {
		s.next <- struct{}{}
	}
	s.next <- struct{}{}
	want := b.Parts(full)
	if len(want) < 3 {
		t.Fatalf("%d parts; the row needs 3 or more", len(want))
	}
	got := b.Shown(func(ps []Post) bool { return slices.Equal(texts(ps), want) })
	for i, p := range got {
		if n := len([]rune(p.Text)); n > b.MaxRunes() {
			t.Errorf("message %d has %d characters, above %d", i, n, b.MaxRunes())
		}
	}
	b.Handler().SetReply(nil)
	if n := len(b.Settle()); n != len(want)+1 {
		t.Errorf("%d messages; want %d and the settle answer", n, len(want))
	}
}

// streamCut: a streamed reply that broke off shows the words that came
// and mnemo.CutNote, once.
func streamCut(t *testing.T, d Driver) {
	b := d.Start(t, Setup{})
	s := streamer{next: make(chan struct{}), cut: true}
	b.Handler().SetReply(s.reply("The answer is", " forty"))
	b.DM("question")
	s.next <- struct{}{}
	b.Shown(func(ps []Post) bool { return len(ps) == 1 })
	s.next <- struct{}{}
	s.next <- struct{}{}
	want := b.Parts("The answer is forty" + mnemo.CutNote)
	b.Shown(func(ps []Post) bool { return slices.Equal(texts(ps), want) })
	b.Handler().SetReply(nil)
	if got := texts(b.Settle()); !slices.Equal(got, append(want, "echo: settle")) {
		t.Errorf("messages %q; want %q and the settle answer", got, want)
	}
}

// streamResume: a reply a crash interrupted while it was streamed is
// answered again into the message it had posted (edited), not posted
// anew, so the half-written words are not left beside a second reply.
func streamResume(t *testing.T, d Driver) {
	for _, unjournaled := range []bool{false, true} {
		t.Run(map[bool]string{false: "journaled", true: "unjournaled"}[unjournaled], func(t *testing.T) {
			b := d.Start(t, Setup{IntakeDir: t.TempDir(),
				Interrupted: &Interrupted{Text: "question", Streamed: "The answer i", Unjournaled: unjournaled}})
			if got := texts(b.Settle()); !slices.Equal(got, []string{"echo: settle"}) {
				t.Errorf("posted %q; want only the settle answer", got)
			}
			if got, want := b.Draft(), b.Parts("echo: question")[0]; got != want {
				t.Errorf("the streamed message shows %q; want %q", got, want)
			}
			if n := countTasks(b.Handler(), "question"); n != 1 {
				t.Errorf("the interrupted message was answered %d times", n)
			}
		})
	}
}

// WaitShown is Driver.Shown for a fake that signals its changes: it reads
// the bot's messages (read) each time changed's channel closes, until ok
// holds of them, and fails t when wait passes first.
func WaitShown(t testing.TB, wait time.Duration, changed func() <-chan struct{}, read func() []Post, ok func([]Post) bool) []Post {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		next := changed()
		got := read()
		if ok(got) {
			return got
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("the messages never showed what the test waits for; they show %q", got)
		}
	}
}
