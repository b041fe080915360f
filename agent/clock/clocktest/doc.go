// Package clocktest is a manual clock for tests: time moves only when the
// test calls Advance, and a test can wait, without polling, until the code
// under test has armed its timers.
package clocktest
