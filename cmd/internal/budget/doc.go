// Package budget keeps what the chat platforms may spend (issue 23), so
// that no one person, and not everyone together, can run up the model
// bill: per person, messages a minute and model tokens a day; for all,
// model tokens a day.
//
// Messages a minute is a token bucket (GCRA): a person may send that many
// at once, then one every minute/N. Days are UTC days: a day's tokens are
// counted from 00:00 UTC and start again at the next 00:00 UTC (one reset
// time for everyone, easy to say in a reply and to read in a log). Tokens
// are reserved before the model is asked (Reserve: the message's Estimate
// and the reply cap) and settled after to what the answer cost (Settle);
// a message is taken while spent and held are under a limit, so however
// many arrive at once only one goes past it. Where the model server
// reports no usage, the app counts with EstimateCall (bytes/3 rounded up).
//
// Memory stays bounded as people grow: what is kept of a person who is
// idle (bucket full, nothing spent today, nothing told in the last
// minute) is dropped at the next sweep (once a minute), and at most
// MaxPeople are kept at once (past it the least recently seen go first,
// which forgets what they spent today: each one's budget is no more than
// a new account's).
//
// The clock is given to New; nothing here starts a goroutine.
package budget
