// Package httpclient is the HTTP client a chat adapter talks to its
// platform with when none is given (New): Go's default transport keeping
// enough idle connections for a busy bot, a timeout per request, and
// (Or) the way to close the idle connections of the client the adapter
// made, and only of that one, when it stops.
package httpclient
