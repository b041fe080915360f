package config

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mnemo-agent/mnemo/agent/text"
)

// This file words the problems found while decoding: yaml.v3's errors,
// which say only the line and the Go type, become messages naming the key
// and what it should be.

// describe names what a node is, for "expected X, got Y". Scalars are not
// quoted here, as they might be secrets.
func describe(n *yaml.Node) string {
	switch deref(n).Kind {
	case yaml.MappingNode:
		return "a mapping (keys and values)"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}

// quote quotes a value for a message, cut to a readable length.
func quote(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "..."
	}
	return strconv.Quote(s)
}

// section names where a key is, for messages.
func section(key string) string {
	if key == "" {
		return "the top level"
	}
	return strconv.Quote(key)
}

var (
	reCannot    = text.NewRegexp("(?s)^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	reNotFound  = text.NewRegexp(`(?s)^field (.+) not found in type (.+)$`)
	reDuplicate = text.NewRegexp(`(?s)^mapping key (".*") already defined at line (\d+)$`)
)

// typeError rewords one of yaml.v3's decoding errors to name the key; one
// it does not know is shown as it is.
func (d *decoder) typeError(msg string) {
	line := 0
	if m := yamlErrLine.Get().FindStringSubmatch(msg); m != nil {
		line, msg = atoi(m[1]), m[2]
	}
	if m := reNotFound.Get().FindStringSubmatch(msg); m != nil {
		prefix := d.schema.section[m[2]]
		d.add(line, "unknown key %q%s", joinKey(prefix, m[1]), d.suggest(m[1], prefix))
		return
	}
	if m := reDuplicate.Get().FindStringSubmatch(msg); m != nil {
		name, _ := strconv.Unquote(m[1])
		for _, e := range d.entries {
			if e.keyNode != nil && e.keyNode.Line == line && deref(e.keyNode).Value == name {
				name = e.key
				break
			}
		}
		if strings.HasPrefix(name, "identities.") {
			d.add(line, "duplicate name %q (already listed at line %s)", name, m[2])
		} else {
			d.add(line, "duplicate key %q (already set at line %s)", name, m[2])
		}
		return
	}
	if m := reCannot.Get().FindStringSubmatch(msg); m != nil {
		tag, into := m[1], m[3]
		if key, ok := d.schema.section[into]; ok && key == "" {
			d.add(line, "the top level must be a mapping of sections (llm:, memory:, slack:, ...), got %s", describe(&yaml.Node{Kind: kinds[tag]}))
			return
		}
		match := func(n *yaml.Node) bool {
			n = deref(n)
			return n.Line == line && shortTag(n) == tag && strings.HasPrefix(n.Value, strings.TrimSuffix(m[2], "..."))
		}
		for n := range d.seen {
			if match(n) {
				return // reported already, or decoded by scalars
			}
		}
		for _, e := range d.entries {
			if d.schema.typeOf(e.key) == into && match(e.n) {
				d.seen[deref(e.n)] = true
				d.add(line, "%s: %s", e.key, expected(e.key, into, deref(e.n), d.schema))
				return
			}
		}
	}
	d.add(line, "%s", strings.ReplaceAll(msg, "\n", `\n`)) // one line per problem
}

// kinds are the node kinds of yaml.v3's tags for collections.
var kinds = map[string]yaml.Kind{"!!seq": yaml.SequenceNode, "!!map": yaml.MappingNode}

// expected says what key should be and what it is.
func expected(key, into string, n *yaml.Node, s *schema) string {
	parent := key[:max(0, strings.LastIndex(key, "["))]
	switch {
	case s.section[into] == key && into != "":
		return "expected a section of keys (a mapping), got " + describe(n)
	case into == "time.Duration" && (n.Tag == "!!int" || n.Tag == "!!float"):
		return fmt.Sprintf("%s has no unit; write it as a duration such as \"%ss\" or \"2m\"", n.Value, n.Value)
	case into == "time.Duration" && n.Kind == yaml.ScalarNode:
		return quote(n.Value) + " is not a duration; use a number with a unit: \"90s\", \"2m\", \"1h30m\""
	case into == "time.Duration":
		return "expected a duration such as \"90s\" or \"2m\", got " + describe(n)
	case into == "map[string][]string":
		return "expected a mapping of names to lists of accounts, e.g. zhangsan: [\"slack:T01ABC/U02DEF\", \"discord:80351110224678912\"], got " + describe(n)
	case into == "[]string" && strings.HasPrefix(key, "identities."):
		return "expected a list of accounts such as [\"slack:T01ABC/U02DEF\", \"discord:80351110224678912\"], got " + describe(n)
	case into == "[]string":
		return fmt.Sprintf("expected a list such as %s, got %s; write even one item as a list (in brackets, or on its own line after \"- \")", s.examples[key], describe(n))
	case strings.HasPrefix(parent, "identities."):
		return "expected an account such as \"slack:T01ABC/U02DEF\" or \"discord:80351110224678912\", got " + describe(n)
	case parent != "":
		return "expected a single value, got " + describe(n)
	case into == "string":
		return "expected a string, got " + describe(n)
	}
	return "expected " + into + ", got " + describe(n)
}

func shortTag(n *yaml.Node) string {
	for tag, k := range kinds {
		if n.Kind == k {
			return tag
		}
	}
	return n.ShortTag()
}

func atoi(s string) int { i, _ := strconv.Atoi(s); return i }

// suggest returns " (did you mean ...?)" for an unknown key name in the
// section prefix, or "".
func (d *decoder) suggest(name, prefix string) string {
	var siblings []string
	for _, k := range d.schema.keys {
		if sib, ok := strings.CutPrefix(k, joinKey(prefix, "")); ok && !strings.Contains(sib, ".") {
			siblings = append(siblings, sib)
		}
	}
	if best, dist := text.Closest(name, siblings); best != "" && dist < 3 && 2*dist < len(best) {
		return fmt.Sprintf(" (did you mean %q?)", joinKey(prefix, best))
	}
	// The right key in the wrong place, or written flat ("memory.dataDir:").
	var elsewhere []string
	for _, k := range d.schema.keys {
		last := k[strings.LastIndex(k, ".")+1:]
		if strings.EqualFold(last, name) || strings.EqualFold(k, name) {
			elsewhere = append(elsewhere, strconv.Quote(k))
		}
	}
	if len(elsewhere) == 0 {
		return ""
	}
	hint := ""
	if strings.Contains(name, ".") {
		hint = "; write it nested, one section per level"
	}
	return fmt.Sprintf(" (did you mean %s?%s)", strings.Join(elsewhere, " or "), hint)
}
