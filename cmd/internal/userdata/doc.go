// Package userdata is the one place that knows where mnemo keeps what it
// knows of a person or of a channel, and the one service that shows,
// exports, lists the history of and forgets it.
//
// Every place that keeps per-owner state is a Holder, and Holders (the
// registry) is the one list of them, built from what the process runs:
// the same list, in the same order, for a running chat or serve and for
// `mnemo memory forget` while no process runs. What differs is only where
// each holder finds the owner's data: in a running process the adapters'
// queues, the reflector and the Thinker's short-term history are live and
// are asked; offline the same holders read the files those would have
// replayed. The holders, in the order a forget runs them:
//
//   - the intake journals of the chat platforms (messages queued for an
//     answer: dropped first, so none becomes a turn after the turns went);
//   - the reflection journal (turns waiting to be reflected; for a
//     channel: the channel is detached from them, the turns stay the
//     speakers');
//   - the Thinker's short-term history (live only);
//   - the reflections the reflector gave up on (reflector/failed);
//   - the memory files (one, or the whole folder);
//   - the memory index cache (state/index/<owner>.idx);
//   - the history of the memory files (state/history, unless kept);
//   - the terminal chat's line history (state/chat/<user>.history).
//
// The owner is a person's memory name or a channel's (mnemo.ChannelKey,
// "#slack-T01-C02"): the two are kept apart, and a person's forget never
// touches a channel's memory (what they said in a channel is the
// channel's). A new kind of per-owner state is a new Holder added to
// Holders; the package's tests fail when a Holder type is not registered
// there, and walk a whole data folder after a forget for any byte left of
// the person.
//
// /memory on Slack, Discord and the terminal chat, `mnemo memory
// forget|show|export|history` and the control socket of a running process
// all call Service's methods.
package userdata
