package platform

// Home is a person's own memory as a platform's home surface shows it
// (Slack's App Home tab): their files, private and shared — never a
// channel's, never anyone else's — and their newest episode entries. The
// app fills it (app.Memory.Home); a platform only renders it.
type Home struct {
	// Files are the person's memory files in the index's order (facts
	// first, then episodes, newest month first).
	Files []HomeFile
	// Entries are the newest episode entries, newest first; MoreEntries
	// counts those left out.
	Entries     []HomeEntry
	MoreEntries int
}

// HomeFile is one memory file on a home surface.
type HomeFile struct {
	Path    string // facts/<name>.md or episodes/YYYY-MM.md
	Summary string // its > Summary: line, or the index's fallback
	Size    int64
	Shared  bool // "> Visibility: shared": used in channels too
	Fact    bool // a fact file (Lines are its first lines)
	// Lines are a fact file's first lines, without its title, summary and
	// visibility lines and without provenance stamps; MoreLines counts
	// those left out.
	Lines     []string
	MoreLines int
}

// HomeEntry is one episode entry on a home surface.
type HomeEntry struct {
	Path, Date, Title, Summary string
}

// HomeHit is one search result on a home surface: where it is (path, line,
// the entry's heading and date) and its text, cut around the match.
type HomeHit struct {
	Path, Heading, Date, Text string
	Line                      int
}
