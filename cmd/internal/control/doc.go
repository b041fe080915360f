// Package control is the control channel of a running mnemo: a unix socket
// in the state folder through which another mnemo command asks the process
// that owns the data folder (mnemo serve or mnemo chat, which hold its lock)
// to make a change for it, rather than changing files under a process that
// would write them back. `mnemo memory forget` and `mnemo access` use it, and
// a second `mnemo chat` holds a conversation through it.
//
// The protocol is one request per connection, each message one line of
// JSON. The client writes
//
//	{"op":"forget","user":"alice","path":"facts/pets.md"}
//
// and the server answers, once the work is done (not when it starts),
//
//	{"ok":true,"message":"…what was done…"}   or   {"ok":false,"error":"…"}
//
// then closes the connection. Unknown fields are refused, a request line is
// at most MaxRequest bytes and a response line at most MaxResponse; the
// operations and their meaning are the server's Handler's.
//
// A session operation (Listen's Options.Sessions; a second mnemo chat
// uses one) keeps the connection open after an OK answer: from then on both
// ends write Events, one JSON line each ({"type":"…",…}, at most MaxEvent
// bytes, unknown fields refused), until the client half-closes or hangs up,
// or the server ends it. The handler's refusal before it opens is the
// answer line as for any request. A session waits on a person, so it has no
// read deadline; each write is bounded (a peer that stops reading is
// dropped), at most Options.MaxSessions are open at once (the next is
// refused, saying so), and Close tells the handlers (Session.Closing), waits
// for them, and when its context ends hangs up on the sessions left. An
// older server that does not know the operation answers with its
// "unknown control operation" error, which the client shows.
//
// The socket is created in a new folder only its user may enter (0700),
// made mode 0600 and renamed into place, so no other user can connect to it
// even for an instant, whatever the umask and the state folder's mode. A
// caller is answered only when it runs as the server's own uid or as root
// (the kernel's record of who connected: SO_PEERCRED on Linux,
// LOCAL_PEERCRED on macOS and FreeBSD; elsewhere nobody is answered);
// anyone else is told so, logged and hung up on, their request unread.
// Listen replaces a socket left behind by a
// process that died: its caller must own the data folder's lock, which makes
// it the only process that may serve that socket.
package control
