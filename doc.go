// Package mnemo is the vocabulary every layer of mnemo speaks: memory
// owners (user names, channel keys and their rules, Scope), the message
// a platform hands over and its answer (Task, Reply, ContextMessage), the
// exchange reflection learns from (Turn), the Tool type memory implements
// and the Thinker calls (NewTool generates its JSON schema from a typed
// parameter struct), and ErrStorage. It imports nothing of mnemo, so the
// store, the Thinker, the reflector and the platforms depend on it and
// not on each other.
package mnemo
