// Package settings checks the part of every chat adapter's Config that is
// the same on every platform (Common): the API address, the
// channelMemory setting (ChannelMemory, and TaskMemory for one message),
// the identities that link the platform's accounts to memory user names,
// and the handler; its errors name the variable or setting at fault and
// say how to fix it.
package settings
