// Package clean neutralises text that comes from outside before it is
// shown or put in a prompt: display and channel names become one short
// line without control, format or blank characters (Name), and model
// output loses the control characters, bidi controls, zero-width
// characters and Unicode tags that must not reach a terminal or a chat
// (Text).
package clean
