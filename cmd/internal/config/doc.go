// Package config owns mnemo's configuration: the Config struct and its YAML
// keys, the chat platforms' sections as they registered (bots/platform:
// each declares its own struct, completes and checks it; Load is given the
// registry's list and names no platform), the defaults (Default), the environment variables that win over
// the file (Env), reading and decoding the file (Load, Parse) and the checks
// that stop start-up with a message naming the key and the fix (Validate).
//
// Order of precedence, lowest first: Default; the YAML file (--config FILE,
// or ./mnemo.yaml when present); the environment variables in Env (one for
// every key, named by the rule in env.go), when set and not blank, which
// Overridden lists where the file set the key too; derived values for what is still empty
// (llm.reflectorModel follows llm.model, state.dir sits beside
// memory.dataDir); then Validate. Command-line flags are applied by the
// caller, which then calls Validate again.
//
// The file is decoded by yaml.v3 with KnownFields; its errors, which carry
// a line each, are reworded to name the file, line and dotted key, with
// "did you mean" for unknown keys and hints for tabs and durations without
// a unit. Every problem is reported at once, one per line.
package config

// The configuration reference, cmd/mnemo/CONFIG.md, is generated from the
// doc comments of Config's fields (see package configdoc); its test fails
// when the file is stale.
//go:generate go test ./configdoc -run TestReference -count=1 -update
