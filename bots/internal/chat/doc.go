// Package chat is what every chat adapter (Slack, Discord) shares and
// nothing platform-specific: running a task through the agent and turning
// failures into polite texts (Answer), answering each conversation in
// order with a bounded work queue (Queue), remembering delivered events so
// a redelivery is answered once (Seen), splitting long replies at the
// platform's limit with code blocks closed and reopened (Split), making
// display names safe for a prompt (CleanName, NameCache), channel memory
// settings (ChannelMemory, TaskMemory), the settings every adapter's
// Config has and checks the same way (Settings), the earlier messages of a thread
// as attributed task context (ThreadContext), and the /memory command
// flow with its single-use confirmation buttons (ParseCommand, MemoryFlow,
// Confirms). Texts shown to people are plain Markdown; each adapter
// converts them to its own markup.
//
// A new chat platform is a package bots/<name> that decodes its events
// into messages and implements pipeline.Platform (bots/internal/pipeline
// journals, queues, answers and posts them with this core), renders
// replies with bots/internal/markdown, passes the conformance table
// (bots/internal/conformance), and is started by cmd/mnemo's serve.
package chat
