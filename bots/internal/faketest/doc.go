// Package faketest is the machinery the fake platforms (slacktest,
// discordtest) share and that is no platform's own: the HTTP server on
// 127.0.0.1, the queue of canned failures per route, the WebSocket upgrade
// that refuses connections once the fake is closed, waiting for a number
// of records, and the small copying and random helpers. Each fake keeps
// its platform's payloads, routes and rules.
package faketest
