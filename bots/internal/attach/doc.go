// Package attach reads the files attached to a chat message for the
// model, the same way on every platform: a text file (.txt, .md, .log,
// code; or a type the platform calls text) is fetched with the
// platform's credential, checked to be text (valid UTF-8, no NUL, sniffed
// as text by net/http.DetectContentType, not an HTML page standing in
// for it) and quoted after a header naming it and its size; anything else
// (images, archives, PDFs …) and a file past what is left of the byte
// cap are only named. A redirect to another host is never followed (a
// login page is not the file, and the credential stays with its host), and
// a body longer than announced is cut at the cap with a note.
//
// The platform says what a file is (File, from its event), how to
// authorise a request and which hosts may be asked (Reader); the reader
// writes what the model is given (Reader.Render). Nothing here keeps state
// between messages: a message is read again, from its journaled File
// list, when it is answered after a restart.
package attach
