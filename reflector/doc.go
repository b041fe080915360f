// Package reflector turns finished chat turns into long-term memory. Each
// turn is written to <state>/reflector/<user>.jsonl the moment it is added
// and made durable off the reply path, by a group commit within a short
// window (journal.go); once a user's conversation has been quiet for a while (or
// enough turns have piled up, or at shutdown) one background run per user
// pre-loads that user's facts and episode index (bounded by a budget), shows the model the whole
// burst of chat as quoted data, and lets it call the memory tools in its own
// agent.RunLoop to write, patch or append what is worth keeping — or nothing
// at all. A run covers the turns of one scope (mnemo.Turn.Scope): a DM's
// turns and a channel's are never shown to the model together, and a
// channel's are reflected with only what that channel may see. Runs of one user never overlap; different users reflect
// concurrently. Covered turns leave the journal only after a successful run,
// so a crash or restart loses no reflection, and a turn whose runs keep
// failing is dropped after a bounded number of attempts.
//
// An explicit turn ("Remember this": mnemo.Turn.Explicit, explicit.go) is a
// person's request to keep one message: it is reflected at once, in a run
// of its own, into their private memory, with the system prompt's
// explicit variant; when the model writes nothing the reflector appends
// the message itself, and Config.OnExplicit hears what the run changed.
//
// Concurrency: each user's state (schedule.go) is changed by one operation
// at a time — Add, Forget, Close, the idle timer firing, a run's journal
// records and its end — under the user's lock, so the user's journal file
// is written in order. What a user waiting to be reflected holds is data
// (bounds.go): the idle timers of every user share one goroutine and one
// clock timer (a turn that pushes its user's deadline later moves it in a
// heap, with no new timer and no wake-up: the clock timer, when it fires
// early, arms the next deadline), the runs a bounded pool of goroutines (Config.MaxRunning),
// and a user's journal file is closed once what was written to it is
// durable. One flusher goroutine fsyncs the files written in each window.
// Timers come from the injected clock.Clock; Close waits for every run,
// and fsyncs what is left.
package reflector
