// Package memorycmd is the /memory command every chat platform answers
// the same way: Parse reads the words after "/memory" (show, share,
// private, forget, help), Flow answers them for the asker's own memory
// through the Memory interface the app satisfies, and a forget waits for
// a Delete or Cancel button whose single-use token Confirms keeps. Texts
// are plain Markdown; each adapter converts them to its own markup.
package memorycmd
