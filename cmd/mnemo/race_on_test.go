//go:build race

package main

// raceEnabled tells the soak's report that the race detector was on.
const raceEnabled = true
