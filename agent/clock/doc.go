// Package clock is the time source that scheduling code takes as a
// dependency: one value that both tells the time and waits, so a test can
// drive both with one fake (see clocktest) instead of mixing a fake Now
// with real timers.
package clock
