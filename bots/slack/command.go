package slack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// Block Kit action ids of the /memory forget confirmation.
const (
	actionForgetConfirm = "mnemo_memory_forget_confirm"
	actionForgetCancel  = "mnemo_memory_forget_cancel"
)

// maxAckBytes bounds an acknowledgement with a payload; Slack drops those
// of 20 KB or more.
const maxAckBytes = 15000

const memoryUsage = "*/memory* shows what I remember about you (only you can see the answer).\n" +
	"*/memory forget facts/&lt;name&gt;.md* or *episodes/YYYY-MM.md* deletes one file, e.g. `/memory forget facts/food.md`.\n" +
	"*/memory forget all* deletes everything I remember about you.\n" +
	"Nothing is deleted until you confirm with a button."

const pathGrammar = "Memory files are `facts/&lt;name&gt;.md` (the name made of letters, digits, `-` and `_`, up to 64) " +
	"or `episodes/YYYY-MM.md` (e.g. `episodes/2026-02.md`); `/memory` lists yours. Nothing was deleted."

// responseMessage is a slash command or response_url answer.
type responseMessage struct {
	ResponseType    string          `json:"response_type,omitempty"`
	Text            string          `json:"text"`
	Blocks          []slackgo.Block `json:"blocks,omitempty"`
	ReplaceOriginal bool            `json:"replace_original,omitempty"`
}

func ephemeral(text string) responseMessage {
	return responseMessage{ResponseType: slackgo.ResponseTypeEphemeral, Text: text}
}

// onSlashCommand answers /memory: the answer goes in the acknowledgement
// when it is ready within ackBudget, else the envelope is acked empty and
// the answer POSTed to the command's response_url.
func (b *Bot) onSlashCommand(ctx, taskCtx context.Context, evt socketmode.Event) {
	cmd, _ := evt.Data.(slackgo.SlashCommand)
	envelope := evt.Request.EnvelopeID // socketmode sets Request on every slash command
	started := b.spawn(ctx, func() {
		done := make(chan responseMessage, 1)
		go func() { done <- b.memoryCommand(cmd) }()
		timer := time.NewTimer(b.ackBudget)
		defer timer.Stop()
		select {
		case msg := <-done:
			if err := b.ack(ctx, envelope, fitAck(msg)); err != nil {
				b.respond(taskCtx, cmd.ResponseURL, fitAck(msg))
			}
		case <-timer.C:
			b.ack(ctx, envelope, nil)
			b.respond(taskCtx, cmd.ResponseURL, fitAck(<-done))
		}
	})
	if !started {
		b.ack(ctx, envelope, nil)
	}
}

// memoryCommand works out the answer to a /memory command.
func (b *Bot) memoryCommand(cmd slackgo.SlashCommand) (msg responseMessage) {
	log := b.log.With("command", cmd.Command, "user", cmd.UserID)
	defer func() {
		if r := recover(); r != nil {
			log.Error("slack: /memory panicked", "panic", r, "stack", string(debug.Stack()))
			msg = ephemeral("Sorry, something went wrong. Please try again later.")
		}
	}()
	if !validID(cmd.TeamID) || !validID(cmd.UserID) {
		return ephemeral("Sorry, I can't tell who you are from this command.")
	}
	if b.cfg.Memory == nil {
		return ephemeral("Memory is not available on this server.")
	}
	user := b.memoryUser(cmd.TeamID, cmd.UserID)
	var args []string
	for _, a := range strings.Fields(textUnescaper.Replace(cmd.Text)) {
		args = append(args, strings.Trim(a, "`'\"“”‘’"))
	}
	switch {
	case len(args) == 0 || len(args) == 1 && (args[0] == "show" || args[0] == "list" || args[0] == "ls"):
		return b.showMemory(user, log)
	case args[0] == "forget" && len(args) >= 2:
		return b.askForget(cmd, user, strings.Join(args[1:], " "), log)
	case args[0] == "forget":
		return ephemeral("Say which file to forget, or `all`.\n\n" + memoryUsage)
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		return ephemeral(memoryUsage)
	}
	return ephemeral("I don't know `/memory " + escapeText(strings.Join(args, " ")) + "`.\n\n" + memoryUsage)
}

// showMemory lists what is remembered about user.
func (b *Bot) showMemory(user string, log *slog.Logger) responseMessage {
	text, err := b.cfg.Memory.Show(user)
	if err != nil {
		log.Warn("slack: /memory cannot read the memory", "memory_user", user, "error", err)
		return ephemeral("Sorry, I couldn't read what I remember about you just now. Please try again later.")
	}
	if strings.TrimSpace(text) == "" {
		return ephemeral("I don't remember anything about you yet.")
	}
	return ephemeral(toMrkdwn(text))
}

// askForget answers /memory forget with a confirmation, or the grammar.
func (b *Bot) askForget(cmd slackgo.SlashCommand, user, target string, log *slog.Logger) responseMessage {
	path, what := target, "`"+escapeText(target)+"`"
	if strings.EqualFold(target, "all") {
		path, what = "", "*everything* I remember about you (every fact and episode file)"
	} else if b.cfg.Memory.CheckPath(target) != nil {
		return ephemeral("`" + escapeText(neutralize(target)) + "` is not a memory file. " + pathGrammar)
	}
	token := b.confirms.add(pendingForget{user: user, slackUser: cmd.UserID, path: path}, b.now())
	log.Info("slack: /memory forget asks for confirmation", "memory_user", user, "path", path)
	note := ""
	if user != "slack-"+cmd.TeamID+"-"+cmd.UserID {
		note = "\nYour Slack account is linked to the memory user `" + escapeText(user) + "`, so this also deletes what was learned through your other linked accounts."
	}
	text := "This deletes " + what + ". It cannot be undone." + note +
		fmt.Sprintf("\nPress *Delete* to confirm (within %d minutes), or *Cancel*.", int(confirmTTL.Minutes()))
	section := slackgo.NewSectionBlock(slackgo.NewTextBlockObject(slackgo.MarkdownType, text, false, false), nil, nil)
	del := slackgo.NewButtonBlockElement(actionForgetConfirm, token,
		slackgo.NewTextBlockObject(slackgo.PlainTextType, "Delete", false, false)).WithStyle(slackgo.StyleDanger)
	cancel := slackgo.NewButtonBlockElement(actionForgetCancel, token,
		slackgo.NewTextBlockObject(slackgo.PlainTextType, "Cancel", false, false))
	msg := ephemeral(text)
	msg.Blocks = []slackgo.Block{section, slackgo.NewActionBlock("mnemo_memory_forget", del, cancel)}
	return msg
}

// onInteractive handles the Delete and Cancel buttons (already acked).
func (b *Bot) onInteractive(ctx, taskCtx context.Context, evt socketmode.Event) {
	cb, ok := evt.Data.(slackgo.InteractionCallback)
	if !ok || cb.Type != slackgo.InteractionTypeBlockActions {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a != nil && (a.ActionID == actionForgetConfirm || a.ActionID == actionForgetCancel) {
			action, token := a.ActionID, a.Value
			b.spawn(ctx, func() { b.forgetButton(taskCtx, cb, action, token) })
			return
		}
	}
}

// forgetButton carries out a pressed Delete or Cancel button.
func (b *Bot) forgetButton(ctx context.Context, cb slackgo.InteractionCallback, action, token string) {
	log := b.log.With("user", cb.User.ID, "action", action)
	p, res := b.confirms.take(token, cb.User.ID, b.now())
	msg := responseMessage{ResponseType: slackgo.ResponseTypeEphemeral, ReplaceOriginal: true}
	switch {
	case res == confirmWrongUser:
		msg.ReplaceOriginal = false
		msg.Text = "This confirmation belongs to someone else; nothing was deleted."
	case res == confirmUnknown:
		msg.Text = "This confirmation has expired or was already used; nothing was deleted. Run `/memory forget …` again if you still want to."
	case action == actionForgetCancel:
		msg.Text = "Cancelled: nothing was deleted."
	default:
		what := "`" + escapeText(p.path) + "`"
		if p.path == "" {
			what = "everything I remembered about you"
		}
		if err := b.forget(p); err != nil {
			log.Warn("slack: /memory forget failed", "memory_user", p.user, "path", p.path, "error", err)
			msg.Text = "Sorry, I couldn't delete " + what + ": " + escapeText(neutralize(err.Error()))
		} else {
			log.Info("slack: memory forgotten at the user's request", "memory_user", p.user, "path", p.path)
			msg.Text = "Done: I deleted " + what + "."
		}
	}
	b.respond(ctx, cb.ResponseURL, msg)
}

// forget calls Memory.Forget; a panic is an error.
func (b *Bot) forget(p pendingForget) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error")
			b.log.Error("slack: Memory.Forget panicked", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	return b.cfg.Memory.Forget(p.user, p.path)
}

// fitAck cuts a long answer (a listing) so the acknowledgement stays well
// under Slack's 20 KB limit, saying so at the cut.
func fitAck(msg responseMessage) responseMessage {
	size := func(m responseMessage) int {
		js, _ := json.Marshal(socketmode.Response{EnvelopeID: strings.Repeat("0", 36), Payload: m})
		return len(js)
	}
	n := size(msg)
	if n < maxAckBytes {
		return msg
	}
	body := msg.Text
	msg.Blocks = nil
	const note = "\n\n_(This list is cut here: it is too long for one Slack message. An admin can see all of it with `mnemo memory ls`.)_"
	keep := utf8.RuneCountInString(body)
	for {
		keep = keep * maxAckBytes / n * 9 / 10
		msg.Text = cutLines(body, keep) + note
		if n = size(msg); n < maxAckBytes || keep == 0 {
			return msg
		}
	}
}

// cutLines keeps at most max characters of mrkdwn text, cut at a line
// break when there is one, with an open code block closed.
func cutLines(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	s = string(r[:max])
	if i := strings.LastIndexByte(s, '\n'); i > 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, "\n")
	if strings.Count(s+"\n", fence+"\n")%2 == 1 {
		s += "\n" + fence
	}
	return s
}

// respond POSTs msg to a response_url (a slash command's or a button's).
func (b *Bot) respond(ctx context.Context, responseURL string, msg responseMessage) {
	if !b.allowedResponseURL(responseURL) {
		b.log.Warn("slack: not answering at an unexpected response_url", "host", hostOf(responseURL))
		return
	}
	body, _ := json.Marshal(msg)
	// The URL parsed above, so the request can be made.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := b.http.Do(req)
	if err != nil {
		b.log.Warn("slack: cannot answer at the response_url", "error", err)
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		b.log.Warn("slack: the response_url refused the answer", "status", resp.StatusCode)
	}
}

// allowedResponseURL: only Slack's own addresses (or the configured API
// host, for tests and proxies) receive answers.
func (b *Bot) allowedResponseURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == b.apiURL.Scheme && u.Host == b.apiURL.Host {
		return true
	}
	h := strings.ToLower(u.Hostname())
	return u.Scheme == "https" && (h == "slack.com" || strings.HasSuffix(h, ".slack.com"))
}

func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Host
	}
	return ""
}

// pendingForget is a /memory forget waiting for its button.
type pendingForget struct {
	user      string // memory user
	slackUser string // who asked; only they may confirm
	path      string // "" = all
	expires   time.Time
}

type confirmResult int

const (
	confirmOK confirmResult = iota
	confirmUnknown
	confirmWrongUser
)

// confirmStore keeps pending confirmations under random single-use
// tokens, at most max of them, each for ttl.
type confirmStore struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	m   map[string]pendingForget
}

func newConfirmStore(max int, ttl time.Duration) *confirmStore {
	return &confirmStore{max: max, ttl: ttl, m: map[string]pendingForget{}}
}

// add stores p and returns its token.
func (c *confirmStore) add(p pendingForget, now time.Time) string {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	p.expires = now.Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.m {
		if now.After(v.expires) {
			delete(c.m, k)
		}
	}
	if len(c.m) >= c.max { // drop the one closest to expiry
		oldest := ""
		for k, v := range c.m {
			if oldest == "" || v.expires.Before(c.m[oldest].expires) {
				oldest = k
			}
		}
		delete(c.m, oldest)
	}
	c.m[token] = p
	return token
}

// take returns and removes the confirmation of token when slackUser may
// use it; a token of someone else's is left in place.
func (c *confirmStore) take(token, slackUser string, now time.Time) (pendingForget, confirmResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[token]
	switch {
	case !ok || now.After(p.expires):
		delete(c.m, token)
		return pendingForget{}, confirmUnknown
	case p.slackUser != slackUser:
		return pendingForget{}, confirmWrongUser
	}
	delete(c.m, token)
	return p, confirmOK
}
