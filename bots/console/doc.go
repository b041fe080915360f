// Package console is the terminal adapter: each line a person types becomes
// an agent task for one memory user, and the reply is printed. It only
// translates between lines and tasks; the agent and memory are passed in.
package console
