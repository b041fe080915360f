// Package memory owns each user's long-term memory: Markdown files under
// <dataDir>/<user>/{facts,episodes}/, reached only through an os.Root opened
// on that user's own folder and a strict path grammar, written atomically
// (temp file, fsync, rename, folder fsync), guarded against overwriting edits
// a person made by hand, and indexed in memory by an fsnotify watcher so that
// List is cheap and the next List after any edit sees it. A file is private
// unless its header says "> Visibility: shared" (visibility.go); a View
// (view.go) is what one conversation may see — in a channel only the
// speaker's shared files and the channel's own memory (a folder named by
// mnemo.ChannelKey) under channel/ — and where its writes may go. It also provides the
// six memory_* tools the agent and the reflector call (memory_search's
// ranking is memory/search's, its index kept in step by search.go): a new one is a
// typed parameter struct and mnemo.NewTool in tools.go, with its
// description in tools/<name>.md.
package memory
