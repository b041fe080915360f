// Package split cuts a long reply into the parts one platform message
// holds (Text): at blank lines and line breaks where it can, inside a
// long line at a space, never inside an HTML-like tag or entity when that
// can be helped, with a code block that a cut crosses closed at the end
// of one part and reopened, with its info string, at the start of the
// next.
package split
