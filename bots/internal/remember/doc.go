// Package remember is "Remember this" as every chat platform runs it: a
// person points at a message (a Slack message shortcut, a Discord message
// context-menu command, the terminal's /memory remember) and mnemo keeps
// it in that person's private memory, as an explicit request to the
// reflector. Flow checks access and budgets as for a message, hands the
// message to the Service the app satisfies (which waits for the
// reflection and notes how to undo it), and words the confirmation —
// naming the file written — and the Undo's answer. Texts are plain
// Markdown; each adapter converts them to its own markup and adds its
// Undo button.
package remember
