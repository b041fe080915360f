package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// testClock is a clock the test moves (the access checks of serve and
// `mnemo access` read it).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// accessWorld is a `mnemo serve` run through run() against the fakes,
// with a clock the test moves.
type accessWorld struct {
	*chatWorld
	clock *testClock
	logs  *syncWriter
	addr  string
	stop  func() // stops serve and waits for it (once)
}

// serveAccess writes config (mnemo.yaml in w's folder) and runs serve
// until the test ends; wait says when the adapters are up.
func serveAccess(t *testing.T, w *chatWorld, config string, wait func() error) *accessWorld {
	t.Helper()
	// Replies come whole (one post each, read as posted); streaming has
	// its own tests.
	config = "llm:\n  stream: false\n" + config
	if err := os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ln := listenLocal(t)
	addr := ln.Addr().String()
	ln.Close()
	aw := &accessWorld{chatWorld: w, clock: &testClock{t: time.Now()}, logs: &syncWriter{}, addr: addr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		err := runWith(stopOn(ctx), []string{"serve", "--listen", addr}, cliEnv{getenv: func(k string) string { return w.env[k] },
			stdin: strings.NewReader(""), stdout: io.Discard, stderr: aw.logs, now: aw.clock.now})
		done <- exitCode(err, aw.logs)
	}()
	var once sync.Once
	aw.stop = func() {
		once.Do(func() {
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("serve exit %d:\n%s", code, aw.logs.String())
			}
		})
	}
	t.Cleanup(aw.stop)
	if err := wait(); err != nil {
		t.Fatalf("serve did not connect: %v\n%s", err, aw.logs.String())
	}
	aw.logs.waitLogged(t, 10*time.Second, "serve: running")
	return aw
}

// access runs `mnemo access ARGS` with the test's clock.
func (aw *accessWorld) access(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errOut syncWriter
	err := runWith(stopOn(context.Background()), append([]string{"access"}, args...), cliEnv{getenv: func(k string) string { return aw.env[k] },
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, now: aw.clock.now})
	code := exitCode(err, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

// noTrace fails when anything of the person named by id (a Slack or
// Discord user id) reached the memory folder or the intake journal.
func (aw *accessWorld) noTrace(t *testing.T, id string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(aw.dir, "data", "memory"))
	for _, e := range entries {
		if strings.Contains(e.Name(), id) {
			t.Errorf("a memory folder %s was made for a refused person", e.Name())
		}
	}
	filepath.WalkDir(filepath.Join(aw.dir, "data", "state", "intake"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), id) {
				t.Errorf("the intake journal %s holds the refused person's message:\n%s", path, b)
			}
		}
		return nil
	})
}

func (aw *accessWorld) metric(t *testing.T, line string) {
	t.Helper()
	if _, body := get(t, "http://"+aw.addr+"/metrics"); !strings.Contains(body, "\n"+line+"\n") {
		t.Errorf("/metrics lacks %q:\n%s", line, body)
	}
}

// By default Slack answers its own workspace only: a DM from another team
// (Slack Connect) gets one reply saying whom to ask, then silence within
// the hour; no memory folder, no journal line, no model call; /memory too.
// Once the operator allows them (through the running serve) they are
// answered.
func TestAccessSlackOtherTeamRefusedByDefault(t *testing.T) {
	w := newChatWorld(t)
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	aw := serveAccess(t, w, "reflector:\n  idle: 1h\n", func() error { return slk.WaitConnected(1, 10*time.Second) })

	guest := slacktest.MessageEvent{Channel: "D0BOB", ChannelType: "im", User: "U0BOB", Team: "T0GUEST", Text: "Hello, I'm Bob Stranger."}
	slk.Message(guest)
	posts, err := slk.WaitPosts(1, 10*time.Second)
	if err != nil {
		t.Fatalf("no refusal: %v\n%s", err, aw.logs.String())
	}
	if posts[0].Channel != "D0BOB" || !strings.Contains(posts[0].Text, "mnemo access allow slack:T0GUEST/U0BOB") {
		t.Fatalf("refusal %+v", posts[0])
	}
	slk.Message(guest)
	aw.logs.waitFor(t, "message refused: not let in (told within the hour)", 1)
	env := slk.SlashCommand(slacktest.SlashCommand{TeamID: "T0GUEST", UserID: "U0BOB", ChannelID: "D0BOB"})
	ack, err := slk.WaitAck(env.ID, 10*time.Second)
	if err != nil || !strings.Contains(string(ack.Payload), "mnemo access allow slack:T0GUEST/U0BOB") {
		t.Fatalf("/memory of a refused person: %s, %v", ack.Payload, err)
	}
	if got := len(slk.Posts()); got != 1 {
		t.Errorf("%d posts; the second message within the hour was answered", got)
	}
	if n := len(w.srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the model", n)
	}
	aw.noTrace(t, "U0BOB")
	aw.metric(t, `mnemo_refused_total{platform="slack",reason="access"} 3`)

	// The home team is answered as before.
	slk.Message(slacktest.MessageEvent{Channel: "D0ADA", ChannelType: "im", User: "U0ADA", Text: "Hello, I'm Ada Lovelace."})
	if posts, err := slk.WaitPosts(2, 10*time.Second); err != nil || posts[1].Text != "Noted." {
		t.Fatalf("home member: %+v, %v\n%s", posts, err, aw.logs.String())
	}

	// The operator lets Bob in while serve runs: his next message is answered.
	aw.access(t, "allow", "slack:T0GUEST/U0BOB").want(t, 0, "allowed slack:T0GUEST/U0BOB (done by", "")
	slk.Message(guest)
	if posts, err := slk.WaitPosts(3, 10*time.Second); err != nil || posts[2].Text != "Noted." || posts[2].Channel != "D0BOB" {
		t.Fatalf("allowed guest: %+v, %v\n%s", posts, err, aw.logs.String())
	}
	aw.access(t, "ls").want(t, 0, "slack:T0GUEST/U0BOB  added ", "")

	// Bob stays let in after a restart.
	aw.stop()
	aw = serveAccess(t, w, "reflector:\n  idle: 1h\n", func() error { return slk.WaitConnected(2, 10*time.Second) })
	slk.Message(guest)
	if posts, err := slk.WaitPosts(4, 10*time.Second); err != nil || posts[3].Text != "Noted." {
		t.Fatalf("allowed guest after a restart: %+v, %v\n%s", posts, err, aw.logs.String())
	}
}

// A Discord allowlist of one role lets in its members and refuses the
// others (in the server and in a DM, which carries no roles).
func TestAccessDiscordAllowlistRole(t *testing.T) {
	w := newChatWorld(t)
	dsc := w.fakeDiscord(t, discordtest.Options{})
	aw := serveAccess(t, w, "reflector:\n  idle: 1h\ndiscord:\n  access: allowlist\n  allow: [\"role:500000000000000001\"]\n",
		func() error { return dsc.WaitReady(1, 10*time.Second) })
	const guild, channel, bot = "400000000000000001", "400000000000000002", "1000000000000000001"
	member := func(id string, roles ...string) (*discordgo.User, *discordgo.Member) {
		u := &discordgo.User{ID: id, Username: "u" + id[len(id)-2:]}
		return u, &discordgo.Member{User: u, Roles: roles}
	}
	staff, staffMember := member("300000000000000011", "500000000000000001", "500000000000000009")
	dsc.MessageCreate(discordgo.Message{ChannelID: channel, GuildID: guild, Author: staff, Member: staffMember, Content: "<@" + bot + "> Hello, I'm Ada Lovelace."})
	posts, err := dsc.WaitPosts(1, 10*time.Second)
	if err != nil || posts[0].Body.Content != "Noted." {
		t.Fatalf("member with the role: %+v, %v\n%s", posts, err, aw.logs.String())
	}
	other, otherMember := member("300000000000000022", "500000000000000009")
	dsc.MessageCreate(discordgo.Message{ChannelID: channel, GuildID: guild, Author: other, Member: otherMember, Content: "<@" + bot + "> Hello, I'm Bob Stranger."})
	posts, err = dsc.WaitPosts(2, 10*time.Second)
	if err != nil || !strings.Contains(posts[1].Body.Content, "mnemo access allow discord:user:300000000000000022") {
		t.Fatalf("member without the role: %+v, %v\n%s", posts, err, aw.logs.String())
	}
	// The role's member in a DM: no roles there.
	dsc.MessageCreate(discordgo.Message{ChannelID: "400000000000000003", Author: staff, Content: "Hello again"})
	posts, err = dsc.WaitPosts(3, 10*time.Second)
	if err != nil || !strings.Contains(posts[2].Body.Content, "mnemo access allow discord:user:300000000000000011") {
		t.Fatalf("DM: %+v, %v", posts, err)
	}
	if n := len(w.srv.Requests()); n != 1 {
		t.Errorf("%d model requests; want the one of the member let in", n)
	}
	aw.noTrace(t, "300000000000000022")
	aw.metric(t, `mnemo_refused_total{platform="discord",reason="access"} 2`)
}

var codeRe = regexp.MustCompile("mnemo access approve ([A-Z0-9]+)")

// Pairing: a stranger gets a code; `mnemo access approve CODE` lets them
// in from the next message (and across a restart: the file); a code an
// hour old is refused; ls lists and revoke takes back.
func TestAccessDiscordPairing(t *testing.T) {
	w := newChatWorld(t)
	dsc := w.fakeDiscord(t, discordtest.Options{})
	aw := serveAccess(t, w, "reflector:\n  idle: 1h\ndiscord:\n  access: pairing\n", func() error { return dsc.WaitReady(1, 10*time.Second) })
	ana := &discordgo.User{ID: "300000000000000033", Username: "ana"}
	dm := func(u *discordgo.User, text string, posts int) string {
		t.Helper()
		dsc.MessageCreate(discordgo.Message{ChannelID: "4000000000000000" + u.ID[len(u.ID)-2:], Author: u, Content: text})
		got, err := dsc.WaitPosts(posts, 10*time.Second)
		if err != nil {
			t.Fatalf("no answer to %q: %v\n%s", text, err, aw.logs.String())
		}
		// A streamed reply is edited after its first post: what it shows
		// once the task is done.
		p := got[posts-1]
		if _, err := dsc.WaitMessage(p.ChannelID, p.Message.ID, 10*time.Second, func(m discordgo.Message) bool {
			return !strings.HasPrefix("Noted.", m.Content) || m.Content == "Noted."
		}); err != nil {
			t.Fatal(err)
		}
		for _, m := range dsc.Messages(p.ChannelID) {
			if m.ID == p.Message.ID {
				return m.Content
			}
		}
		return p.Body.Content
	}
	reply := dm(ana, "Hello, I'm Ana Stranger.", 1)
	m := codeRe.FindStringSubmatch(reply)
	if m == nil {
		t.Fatalf("no code in %q", reply)
	}
	aw.noTrace(t, ana.ID)
	aw.access(t, "ls").want(t, 0, m[1]+"  discord:user:"+ana.ID, "")
	aw.access(t, "approve", strings.ToLower(m[1])).want(t, 0, "approved "+m[1]+": discord:user:"+ana.ID+" may talk to mnemo now", "")
	if reply := dm(ana, "Hello, I'm Ana Stranger.", 2); reply != "Noted." {
		t.Fatalf("approved: %q", reply)
	}
	aw.access(t, "approve", m[1]).want(t, 1, "", "no pairing code "+m[1]+" is waiting")

	// A code an hour old is refused.
	bo := &discordgo.User{ID: "300000000000000044", Username: "bo"}
	m = codeRe.FindStringSubmatch(dm(bo, "hi", 3))
	if m == nil {
		t.Fatal("no code for bo")
	}
	aw.clock.add(time.Hour)
	aw.access(t, "approve", m[1]).want(t, 1, "", "pairing code "+m[1]+": the pairing code has expired")
	if reply := dm(bo, "hi again", 4); !strings.Contains(reply, "mnemo access approve") || strings.Contains(reply, m[1]) {
		t.Fatalf("after expiry: %q", reply)
	}
	aw.noTrace(t, bo.ID)

	// Revoke: Ana is refused again.
	aw.access(t, "revoke", "discord:"+ana.ID).want(t, 0, "revoked discord:user:"+ana.ID, "")
	if reply := dm(ana, "still there?", 5); !strings.Contains(reply, "mnemo access approve") {
		t.Fatalf("revoked: %q", reply)
	}
	aw.access(t, "revoke", "discord:"+ana.ID).want(t, 1, "", "is not in the access list")
	if n := len(w.srv.Requests()); n != 1 {
		t.Errorf("%d model requests; want Ana's one", n)
	}
}

// Without serve, `mnemo access` changes the file under the data folder's
// lock; an allowed entry and a config entry are listed; usage mistakes
// change nothing.
func TestAccessWithoutServe(t *testing.T) {
	w := newChatWorld(t)
	os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("slack:\n  access: allowlist\n  allow: [T01ABC]\n"), 0o600)
	aw := &accessWorld{chatWorld: w, clock: &testClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}}
	aw.access(t, "allow", "discord:role:123").want(t, 0, "allowed discord:role:123\n", "")
	aw.access(t, "allow", "discord:role:123").want(t, 0, "discord:role:123 was allowed already", "")
	aw.access(t, "ls").want(t, 0, "slack.access: allowlist (only what is listed)\n  slack:T01ABC  slack.allow in the configuration\ndiscord.access: open", "")
	aw.access(t, "revoke", "slack:T01ABC").want(t, 1, "", "is listed in slack.allow in the configuration")
	aw.access(t, "allow", "slack:t01").want(t, 2, "", `access allow: "slack:t01": "t01" is not a Slack id (they are upper case)`)
	aw.access(t, "approve", "I0O1").want(t, 2, "", "is not a pairing code")
	aw.access(t, "approve").want(t, 2, "", "access approve takes 1 argument; usage: mnemo access approve CODE")
	aw.access(t, "nope").want(t, 2, "", `unknown access subcommand "nope"`)
	aw.access(t).want(t, 2, "", "access needs a subcommand")
	aw.access(t, "revoke", "discord:role:123").want(t, 0, "revoked discord:role:123", "")
	if b, err := os.ReadFile(filepath.Join(w.dir, "data", "state", "access.json")); err != nil || strings.Contains(string(b), "123") {
		t.Fatalf("access.json: %s, %v", b, err)
	}
	os.WriteFile(filepath.Join(w.dir, "data", "state", "access.json"), []byte("{"), 0o600)
	aw.access(t, "ls").want(t, 1, "", "is damaged")
	aw.access(t, "allow", "slack:U1").want(t, 1, "", "is damaged")
}

// The control socket's access operation checks what it is given; a
// damaged access list stops serve's gates with the file named.
// A process that holds the lock and does not answer on the control socket
// is named, with what to do.
func TestAccessHolderWithoutSocket(t *testing.T) {
	w := newChatWorld(t)
	var out, errOut bytes.Buffer
	err := runWith(stopOn(context.Background()), []string{"access", "allow", "slack:U1"}, cliEnv{getenv: func(k string) string { return w.env[k] },
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, flock: func(int, int) error { return syscall.EWOULDBLOCK }})
	if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "which does not answer on the control socket") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

// Strangers flooding the pairing queue from one place (here Discord's
// DMs) get MaxPendingPerSource codes; the next is told whom to ask, and
// `mnemo access ls` lists each code's source and says the queue from
// there is full.
func TestAccessPairingFlood(t *testing.T) {
	w := newChatWorld(t)
	dsc := w.fakeDiscord(t, discordtest.Options{})
	aw := serveAccess(t, w, "reflector:\n  idle: 1h\ndiscord:\n  access: pairing\n", func() error { return dsc.WaitReady(1, 10*time.Second) })
	for i := range access.MaxPendingPerSource + 1 {
		u := &discordgo.User{ID: fmt.Sprint(300000000000000100 + i), Username: fmt.Sprint("s", i)}
		dsc.MessageCreate(discordgo.Message{ChannelID: fmt.Sprint(400000000000000100 + i), Author: u, Content: "let me in"})
	}
	posts, err := dsc.WaitPosts(access.MaxPendingPerSource+1, 10*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, aw.logs.String())
	}
	codes, busy := 0, 0
	for _, p := range posts {
		switch c := p.Body.Content; {
		case codeRe.MatchString(c):
			codes++
		case strings.Contains(c, "too many people are waiting for approval"):
			busy++
		}
	}
	if codes != access.MaxPendingPerSource || busy != 1 {
		t.Fatalf("%d codes, %d told to ask: %+v", codes, busy, posts)
	}
	r := aw.access(t, "ls")
	r.want(t, 0, "discord: 5 codes wait from DMs, the most from one place: more strangers from there are told to ask you instead", "")
	if n := strings.Count(r.stdout, "from DMs\n"); n != access.MaxPendingPerSource {
		t.Errorf("%d codes listed from DMs:\n%s", n, r.stdout)
	}
	if n := len(w.srv.Requests()); n != 0 {
		t.Errorf("%d model requests", n)
	}
}
