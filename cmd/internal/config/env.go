package config

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// This file is the environment rule: every key has one variable, made
// from the key by one rule, and a variable that is set and not blank wins
// over the file.
//
// The rule: the field's `env` tag when it has one (the ten names DESIGN.md
// gives: OPENAI_API_KEY, MNEMO_MODEL, SLACK_BOT_TOKEN, …), else MNEMO_ and
// the key in upper case, "." → "_" and an "_" before each capital that
// follows a lower-case letter or digit (llm.maxRetries →
// MNEMO_LLM_MAX_RETRIES, discord.guildIDs → MNEMO_DISCORD_GUILD_IDS).

// EnvVar is a key's environment variable: its name, the key and a pointer
// to the key's field in the Config given to Env.
type EnvVar struct {
	Name, Key string
	Field     any
	// Struct declares the key's field, named FieldName (config.Config for
	// a top-level key): its doc comment documents the key.
	Struct    reflect.Type
	FieldName string
	// Secret: the key holds a secret (its field's `secret:"true"` tag):
	// a file that sets it should be readable by mnemo's user alone.
	Secret bool
	// ruleName is what the rule alone would name the key; a tagged key's
	// differs, and setting it is refused with the right name.
	ruleName string
}

// Env lists the environment variables of c's keys, in the order of the
// keys.
func Env(c *Config) []EnvVar {
	var out []EnvVar
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		t := v.Type()
		owner := t
		if prefix == "" {
			owner = reflect.TypeFor[Config]() // the view's top-level keys are Config's
		}
		for i := range t.NumField() {
			f, fv := t.Field(i), v.Field(i)   // all exported: the view's, or a section's keys
			if fv.Kind() == reflect.Pointer { // the view's pointers to c's fields
				fv = fv.Elem()
			}
			key := joinKey(prefix, f.Tag.Get("yaml"))
			if fv.Kind() == reflect.Struct {
				walk(fv, key)
				continue
			}
			rule := ruleEnvName(key)
			out = append(out, EnvVar{Name: cmp.Or(f.Tag.Get("env"), rule), Key: key, Field: fv.Addr().Interface(),
				Struct: owner, FieldName: f.Name, Secret: f.Tag.Get("secret") == "true", ruleName: rule})
		}
	}
	walk(c.view(), "")
	return out
}

// ruleEnvName is MNEMO_ and key in upper snake case.
func ruleEnvName(key string) string {
	var b strings.Builder
	b.WriteString("MNEMO_")
	var prev rune
	for _, r := range key {
		switch {
		case r == '.':
			b.WriteByte('_')
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteRune(unicode.ToUpper(r))
		}
		prev = r
	}
	return b.String()
}

// applyEnv sets every key whose variable is set and not blank, recording
// where each came from in origin and which keys the file also set in
// overridden. Bad values are problems naming the variable and the fix.
func (d *decoder) applyEnv(c *Config, getenv func(string) string) (overridden []string) {
	for _, e := range Env(c) {
		if e.ruleName != e.Name && strings.TrimSpace(getenv(e.ruleName)) != "" {
			d.add(0, "%s is set, but mnemo does not read it: the variable of %s is %s; rename it", e.ruleName, e.Key, e.Name)
		}
		raw := strings.TrimSpace(getenv(e.Name))
		if raw == "" {
			continue
		}
		fv := reflect.ValueOf(e.Field).Elem()
		if err := setFromEnv(fv, raw); err != nil {
			d.add(0, "%s (%s): %v", e.Name, e.Key, err)
			continue
		}
		if src, ok := d.origin[e.Key]; ok && !strings.HasPrefix(src, "env ") {
			overridden = append(overridden, e.Key+" ("+e.Name+")")
		}
		for k := range d.origin { // the file's items of a list or map no longer apply
			if strings.HasPrefix(k, e.Key+"[") || strings.HasPrefix(k, e.Key+".") {
				delete(d.origin, k)
			}
		}
		d.origin[e.Key] = "env " + e.Name
		switch v := fv.Interface().(type) {
		case []string:
			for i := range v {
				d.origin[fmt.Sprintf("%s[%d]", e.Key, i)] = fmt.Sprintf("env %s (item %d)", e.Name, i+1)
			}
		case map[string][]string:
			for name, accounts := range v {
				d.origin[e.Key+"."+name] = fmt.Sprintf("env %s (%s)", e.Name, name)
				for i := range accounts {
					d.origin[fmt.Sprintf("%s.%s[%d]", e.Key, name, i)] = fmt.Sprintf("env %s (%s, item %d)", e.Name, name, i+1)
				}
			}
		}
	}
	return overridden
}

// setFromEnv parses raw (trimmed, not empty) into f by f's type. Its
// errors never show a string key's value, which may be a secret.
func setFromEnv(f reflect.Value, raw string) error {
	switch {
	case f.Type() == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(raw)
		if _, nerr := strconv.ParseFloat(raw, 64); err != nil && nerr == nil {
			return fmt.Errorf("%s has no unit; write it as a duration such as \"%ss\" or \"2m\"", quote(raw), raw)
		} else if err != nil {
			return fmt.Errorf("%s is not a duration; use a number with a unit: \"90s\", \"2m\", \"1h30m\"", quote(raw))
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Int:
		i, err := strconv.Atoi(raw)
		if err != nil {
			return fmt.Errorf("%s is not an integer; write decimal digits, e.g. \"20\"", quote(raw))
		}
		f.SetInt(int64(i))
	case f.Kind() == reflect.Bool:
		if raw != "true" && raw != "false" {
			return fmt.Errorf("%s is not true or false; write true or false", quote(raw))
		}
		f.SetBool(raw == "true")
	case f.Kind() == reflect.String:
		f.SetString(raw)
	case f.Kind() == reflect.Slice:
		items, err := envList(raw)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(items))
	default: // identities, the one map (TestEveryKeyBothWays sets every key)
		m, err := envIdentities(raw)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(m))
	}
	return nil
}

// envList splits "A, B,C" into its items, refusing empty ones.
func envList(raw string) ([]string, error) {
	items := strings.Split(raw, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			return nil, fmt.Errorf("item %d is empty; separate the items with single commas, e.g. \"A,B\"", i+1)
		}
	}
	return items, nil
}

// envIdentities parses "name=a,b;other=c" (white space around the parts ignored,
// a final ";" allowed) into name → accounts.
func envIdentities(raw string) (map[string][]string, error) {
	m := map[string][]string{}
	for i, part := range strings.Split(strings.TrimSuffix(raw, ";"), ";") {
		name, list, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %d has no NAME=; write entries as NAME=ACCOUNT,ACCOUNT separated by semicolons, e.g. \"zhangsan=slack:T01ABC/U02DEF,discord:80351110224678912\"", i+1)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s is named twice; list each name once, its accounts separated by commas", quote(name))
		}
		accounts, err := envList(list)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", quote(name), err)
		}
		m[name] = accounts
	}
	return m, nil
}

// Overridden are the keys that both the file and the environment set (the
// environment won), each with its variable: "llm.model (MNEMO_MODEL)".
// Never their values.
func (c *Config) Overridden() []string { return slices.Clone(c.overridden) }
