package chat

import "time"

// Limits shared by the adapters.
const (
	MaxInFlight     = 256              // tasks running at once, all conversations together
	PerConversation = 8                // tasks one conversation may hold (running + waiting)
	DedupeMax       = 5000             // event keys remembered against redelivery
	DedupeTTL       = 2 * time.Hour    // how long an event key is remembered
	ConfirmTTL      = 10 * time.Minute // lifetime of a /memory forget confirmation
	MaxConfirms     = 1000             // pending confirmations kept
	NameCacheMax    = 2000             // display names kept
	NameCacheTTL    = time.Hour        // how long a display name is kept
	MaxContext      = 20               // earlier thread messages given as context
	MaxContextText  = 2000             // characters kept of one context message
)
