package memorycmd

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
)

// Texts of the /memory flow, in Markdown.
const (
	// Usage explains /memory.
	Usage = usageCommands + byButton
	// TypedUsage is Usage where a forget is confirmed by typing (the terminal).
	TypedUsage    = usageCommands + byTyping
	usageCommands = "**/memory** shows what I remember about you, each file marked private or shared (only you can see the answer); in a channel, also what I remember about the channel.\n" +
		"**/memory share facts/<name>.md** lets me use that file in channels too, e.g. `/memory share facts/food.md`; **/memory private facts/<name>.md** keeps it to our private conversations again. Every file is private until you share it.\n" +
		"**/memory forget facts/<name>.md** or **episodes/YYYY-MM.md** deletes one file, e.g. `/memory forget facts/food.md`.\n" +
		"**/memory why <words>** shows what I remember that matches the words, where and when I learned it, and who changed it, e.g. `/memory why Berlin`.\n" +
		"**/memory forget all** deletes everything I remember about you.\n"
	byButton = "Nothing is deleted until you confirm with a button."
	byTyping = "Nothing is deleted until you confirm with **" + ConfirmWord + "**."
	// ConfirmWord confirms a forget where there are no buttons (the
	// terminal): typed after the question, it deletes.
	ConfirmWord = "/forget yes"
	// pathRules says what a memory file name is.
	pathRules = "Memory files are `facts/<name>.md` (the name made of letters, digits, `-` and `_`, up to 64) " +
		"or `episodes/YYYY-MM.md` (e.g. `episodes/2026-02.md`), either with `.shared` before `.md` for a file made in a channel; `/memory` lists yours."
	// PathGrammar answers a forget of a name that is no memory file.
	PathGrammar = pathRules + " Nothing was deleted."
	// ShareGrammar answers a share or private of a name that is no memory file.
	ShareGrammar = pathRules + " Nothing was changed."

	NoMemoryText      = "Memory is not available on this server."
	BrokenText        = "Sorry, something went wrong. Please try again later."
	ShowErrorText     = "Sorry, I couldn't read what I remember about you just now. Please try again later."
	NothingYetText    = "I don't remember anything about you yet."
	ForgetWhichText   = "Say which file to forget, or `all`."
	WrongUserText     = "This confirmation belongs to someone else; nothing was deleted."
	ExpiredText       = "This confirmation has expired or was already used; nothing was deleted. Run `/memory forget …` again if you still want to."
	CancelledText     = "Cancelled: nothing was deleted."
	everythingPending = "**everything** I remember about you (every fact and episode file)"
	everythingDone    = "everything I remembered about you"

	sharedMeaning  = "shared with channels: I may use it in any channel you talk to me in."
	privateMeaning = "private: I use it only when we talk in private, never in a channel."
	// FullNote and OffNote follow /memory answers where the platform's
	// channelMemory setting changes what shared and private mean.
	FullNote = "_This server trusts its channels with all of your memory (`channelMemory: full`): there I use your private files too._"
	OffNote  = "_This server uses no memory in channels (`channelMemory: off`)._"
)

// Flow answers /memory the same way on every platform. Confirms is
// required for forget; the rest may be left zero.
type Flow struct {
	Memory   Memory // nil: "Memory is not available on this server."
	Confirms *Confirms
	Log      *slog.Logger     // nil → discard
	Now      func() time.Time // nil → time.Now
	// Platform names the platform in texts ("Slack": "Your Slack account
	// is linked …"); "" → "Your account is linked …".
	Platform string
	// ChannelMemory is the platform's channelMemory setting: with
	// mnemo.ChannelMemoryOff a channel's memory is not shown (channels use
	// none), and with off or mnemo.ChannelMemoryFull the answers say what
	// that means for private and shared files; "" or read: nothing to add.
	ChannelMemory string
	// Typed: the asker confirms a forget by typing ConfirmWord (Confirm),
	// not with buttons (the terminal); the texts say so.
	Typed bool
}

// Asker is who sent a /memory command, and where.
type Asker struct {
	// ID is the platform user id: only they may confirm a forget.
	ID string
	// User is the memory user the account maps to, and the only one whose
	// files the command reads or changes. Own is the memory user the
	// account would have without identities: when they differ, the forget
	// text says the account is linked and that the forget also deletes
	// what was learned through the other linked accounts.
	User, Own string
	// Channel is the memory name of the channel the command was sent in
	// (mnemo.ChannelKey, as the adapter names it for messages there); ""
	// in a DM.
	Channel string
}

// Answer is what to show the asker (privately): Markdown text, and
// when Confirm is non-empty, a confirmation token for the Delete and
// Cancel buttons (Button takes it back).
type Answer struct {
	Text    string
	Confirm string
}

func (f *Flow) log() *slog.Logger {
	if f.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.Log
}

func (f *Flow) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

// Handle answers one /memory command of a. Only a.User's memory is read or
// changed (and a.Channel's shown): the adapter takes both from the
// platform's event, never from the command's text. Nothing is deleted
// here: forget answers with a confirmation. A panic in Memory becomes a
// polite error text.
func (f *Flow) Handle(cmd Command, a Asker) (ans Answer) {
	log := f.log().With("memory_user", a.User, "asker", a.ID)
	defer func() {
		if r := recover(); r != nil {
			log.Error("/memory panicked", "panic", r, "stack", string(debug.Stack()))
			ans = Answer{Text: BrokenText}
		}
	}()
	if f.Memory == nil {
		return Answer{Text: NoMemoryText}
	}
	switch cmd.Kind {
	case Show:
		channel := a.Channel
		if f.ChannelMemory == mnemo.ChannelMemoryOff {
			channel = "" // channels use no memory here: nothing of theirs to show
		}
		text, err := f.Memory.Show(a.User, channel)
		switch {
		case err != nil:
			log.Warn("/memory cannot read the memory", "channel", channel, "error", err)
			return Answer{Text: ShowErrorText}
		case strings.TrimSpace(text) == "":
			text = NothingYetText
		}
		return Answer{Text: f.noted(text)}
	case Share, Private:
		return Answer{Text: f.noted(SetVisibility(f.Memory, a.User, cmd.Target, cmd.Kind == Share, log))}
	case Forget:
		return f.askForget(cmd.Target, a.User, a.ID, a.Own, log)
	case Why:
		return Answer{Text: f.why(cmd.Target, a, log)}
	case Help:
		return Answer{Text: f.usage()}
	}
	return Answer{Text: "I don't know " + CodeSpan(strings.TrimSpace("/memory "+cmd.Args)) + ".\n\n" + f.usage()}
}

// usage is Usage, or TypedUsage where there are no buttons.
func (f *Flow) usage() string {
	if f.Typed {
		return TypedUsage
	}
	return Usage
}

// WhyWhatText asks for the words of a /memory why.
const WhyWhatText = "Say what to look for, e.g. `/memory why Berlin`."

// WhyErrorText answers a /memory why that could not be answered.
const WhyErrorText = "Sorry, I couldn't look through what I remember just now. Please try again later."

// why answers /memory why words for a: in a channel, only the asker's
// shared files and the channel's memory, sources outside it unnamed.
func (f *Flow) why(words string, a Asker, log *slog.Logger) string {
	if strings.TrimSpace(words) == "" {
		return WhyWhatText
	}
	channel := a.Channel
	if f.ChannelMemory == mnemo.ChannelMemoryOff {
		channel = ""
	}
	// In any channel (a trusted one too) only what is shared is
	// searched: the answer names sources, and a DM's never shows there.
	text, err := f.Memory.Why(a.User, channel, words, a.Channel != "")
	if err != nil {
		log.Warn("/memory why cannot search the memory", "error", err)
		return WhyErrorText
	}
	return text
}

// noted adds to text what the channelMemory setting means for it.
func (f *Flow) noted(text string) string {
	switch f.ChannelMemory {
	case mnemo.ChannelMemoryFull:
		return text + "\n\n" + FullNote
	case mnemo.ChannelMemoryOff:
		return text + "\n\n" + OffNote
	}
	return text
}

// SetVisibility carries out /memory share (shared) or /memory private of
// target, one of user's files, with v, and says in Markdown what changed:
// with no target, which to name; with a name outside the path grammar,
// the grammar; a missing file is said so; an error is logged and answered
// politely (log nil: discarded). Nothing changes but the one file's
// visibility.
func SetVisibility(v Visibility, user, target string, shared bool, log *slog.Logger) string {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	word, verb, meaning := "private", "make private", privateMeaning
	if shared {
		word, verb, meaning = "share", "share", sharedMeaning
	}
	switch {
	case target == "":
		return "Say which file to " + verb + ", e.g. `/memory " + word + " facts/food.md`; `/memory` lists yours."
	case v.CheckPath(target) != nil:
		return CodeSpan(target) + " is not a memory file. " + ShareGrammar
	}
	changed, err := v.SetShared(user, target, shared)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "You have no memory file " + CodeSpan(target) + "; `/memory` lists yours. Nothing was changed."
	case err != nil:
		log.Warn("/memory "+word+" failed", "path", target, "error", err)
		return "Sorry, I couldn't change " + CodeSpan(target) + " just now; nothing was changed. Please try again later."
	case !changed:
		return CodeSpan(target) + " was already " + meaning
	}
	log.Info("memory visibility changed at the user's request", "path", target, "shared", shared)
	return CodeSpan(target) + " is now " + meaning
}

// askForget answers forget with a confirmation, or the grammar.
func (f *Flow) askForget(target, user, asker, ownUser string, log *slog.Logger) Answer {
	path, what := target, CodeSpan(target)
	switch {
	case target == "":
		return Answer{Text: ForgetWhichText + "\n\n" + f.usage()}
	case strings.EqualFold(target, "all"):
		path, what = "", everythingPending
	case f.Memory.CheckPath(target) != nil:
		return Answer{Text: CodeSpan(target) + " is not a memory file. " + PathGrammar}
	}
	token := f.Confirms.Add(Pending{User: user, Asker: asker, Path: path}, f.now())
	log.Info("/memory forget asks for confirmation", "path", path)
	note := ""
	if user != ownUser {
		account := "Your account"
		if f.Platform != "" {
			account = "Your " + f.Platform + " account"
		}
		note = "\n" + account + " is linked to the memory user " + CodeSpan(user) +
			", so this also deletes what was learned through your other linked accounts."
	}
	how := fmt.Sprintf("\nPress **Delete** to confirm (within %s), or **Cancel**.", minutes(f.Confirms.TTL()))
	if f.Typed {
		how = fmt.Sprintf("\nType **%s** to confirm (within %s); anything else cancels.", ConfirmWord, minutes(f.Confirms.TTL()))
	}
	text := "This deletes " + what + ". It cannot be undone." + note + how
	return Answer{Text: text, Confirm: token}
}

// minutes writes a TTL for people: "10 minutes", "1 minute", "30 seconds".
func minutes(d time.Duration) string {
	switch {
	case d < time.Minute:
		return plural(int(d.Seconds()), "second")
	}
	return plural(int(d.Minutes()), "minute")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// Button carries out a pressed Delete (confirm) or Cancel (!confirm)
// button of the confirmation token, pressed by asker, and returns the
// Markdown text to show. wrongUser reports a token of someone else's (the
// adapter answers that person privately, without replacing the original
// message). Memory.Forget is called at most once per token; an error or a
// panic in it is an error text, but for an error wrapping fs.ErrNotExist
// (there was nothing to forget), whose own text is the answer.
func (f *Flow) Button(token, asker string, confirm bool) (text string, wrongUser bool) {
	text, _, wrongUser = f.press(token, asker, confirm)
	return text, wrongUser
}

// Confirm carries out a forget confirmed by typing ConfirmWord (Flow.Typed),
// as Button does a pressed Delete; forgot is what was deleted, when it was.
func (f *Flow) Confirm(token, asker string) (text string, forgot *Pending) {
	text, forgot, _ = f.press(token, asker, true)
	return text, forgot
}

// press is Button, and what it deleted.
func (f *Flow) press(token, asker string, confirm bool) (text string, forgot *Pending, wrongUser bool) {
	log := f.log().With("asker", asker)
	p, res := f.Confirms.Take(token, asker, f.now())
	switch {
	case res == ConfirmWrongUser:
		return WrongUserText, nil, true
	case res == ConfirmUnknown:
		return ExpiredText, nil, false
	case !confirm:
		return CancelledText, nil, false
	}
	what := CodeSpan(p.Path)
	if p.Path == "" {
		what = everythingDone
	}
	err := f.forget(p, log)
	if errors.Is(err, fs.ErrNotExist) { // nothing to forget: Memory words it, as every surface says it
		log.Info("/memory forget: nothing to forget", "memory_user", p.User, "path", p.Path)
		return err.Error(), &p, false // what else was kept of it is gone all the same
	}
	if err != nil {
		log.Warn("/memory forget failed", "memory_user", p.User, "path", p.Path, "error", err)
		return "Sorry, I couldn't delete " + what + ": " + err.Error(), nil, false
	}
	log.Info("memory forgotten at the user's request", "memory_user", p.User, "path", p.Path)
	return "Done: I deleted " + what + ".", &p, false
}

// forget calls Memory.Forget; a panic is an error.
func (f *Flow) forget(p Pending, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("internal error")
			log.Error("Memory.Forget panicked", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if f.Memory == nil {
		return errors.New("memory is not available on this server")
	}
	return f.Memory.Forget(p.User, p.Path)
}

// CodeSpan writes s as a Markdown code span that holds whatever s holds:
// `s`, or with longer backtick fences (and padding spaces) when s has
// backticks itself. s should be one line.
func CodeSpan(s string) string {
	longest := text.LongestRun(s, '`')
	if longest == 0 {
		return "`" + s + "`"
	}
	ticks := strings.Repeat("`", longest+1)
	return ticks + " " + s + " " + ticks
}
