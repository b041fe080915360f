// Package history keeps the earlier versions of memory files: every change
// the store, a person (seen by the watcher), a restore or a forget makes
// is recorded as a version under <state>/history/<user>/<path>/, each a
// copy of the text with a small JSON record of who made it and when, so
// an admin can list them and bring one back. Retention (versions per file
// and age) is enforced on the file being recorded, never by scanning the
// whole history on a write.
package history
