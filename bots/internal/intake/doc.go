// Package intake is the durable intake journal the chat adapters share:
// every message an adapter takes is written to it (and fsynced) before the
// platform is told it arrived, so that a crash (kill -9 included) loses
// nothing that was acknowledged; after a restart the adapter answers what
// the journal still holds.
//
// A message goes through three records, each made durable before the step
// that depends on it:
//
//   - add: the message as the adapter needs it to answer (Add). Slack's
//     envelope is acknowledged only after it; a write or fsync error means
//     "not acknowledged" (Slack delivers it again) and is logged with the
//     file and the cause.
//   - post: the text of the reply, before its first part is posted
//     (Posting). After a crash the adapter looks on the platform for the
//     parts already posted and posts only the missing ones, so a reply is
//     neither lost nor doubled by a crash while it was being posted.
//   - done: the reply was posted (or could not be, for good), or the
//     message was forgotten (Done, Forget). Its dedupe keys stay known for
//     DoneTTL, so a redelivery of an answered message is not answered again,
//     across restarts too.
//
// The records are a schema on memory/durable's journal engine
// (durable.Log): writes from concurrent callers share one write and one
// fsync (group commit): a caller that finds a write in progress adds its
// records to the next batch and waits for it; nothing returns before its
// own records are durable. The file is <Dir>/<Name>.jsonl, one JSON object
// per line. A line that does not parse (the torn last line of a crash
// while it was written) is skipped with a warning; at Open, whenever it has
// grown well past what it still holds, and after a Forget (a purge: no
// byte of the forgotten messages stays), the file is rewritten atomically
// (temp file, fsync, rename, folder fsync) with only the messages pending
// and the keys still remembered. Tests inject disk faults through
// Options.Faults, the durable.Hook every crash test uses.
//
// With an empty Dir the journal lives in memory only (tests, library use):
// the same dedupe and bookkeeping, nothing survives a restart.
//
// Lifecycle is the journal's side of an adapter's life, the same for every
// platform: Run called once, the journal opened at its start and closed at
// its end. What is journaled when, and the replay after a restart, is
// bots/internal/pipeline's.
package intake
