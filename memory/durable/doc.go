// Package durable is how mnemo makes files survive a crash, in one place:
// the disk operations and the fault Hook every crash and disk-fault test
// injects through (Create, Write, Fsync, Rename, FsyncDir, Remove,
// Truncate); WriteFile, the one atomic write (a temp file beside the
// target, written, fsynced, renamed over it, the folder fsynced, after
// google/renameio; Pending the same for a file streamed, an export) and
// SyncDir, the one folder fsync, both working inside an FS (an *os.Root, so memory's sandbox holds, or a Dir); and Log, the
// one append-only JSONL journal engine, on which the chat adapters' intake
// journal and the reflector's journal are two record schemas: appends
// from concurrent callers share one write and one fsync (group commit),
// Scan skips a torn last line and reports it, Replace compacts the file
// (or purges a person's records from it) by an atomic rename.
package durable
