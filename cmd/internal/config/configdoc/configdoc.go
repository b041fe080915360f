// Package configdoc generates mnemo's configuration reference
// (cmd/mnemo/CONFIG.md) from the code: every key of config.Config with its
// type (from the Go type), its default (config.Default), its environment
// variable (config.Env) and its meaning (the field's doc comment in the
// config package's source), then every environment variable the commands
// read. Its test fails when the committed reference differs from what
// Generate makes; `go generate ./cmd/internal/config` rewrites it.
//
// It is a package of its own so that go/parser is not linked into mnemo.
package configdoc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// RefreshCommand is the command that rewrites the reference.
const RefreshCommand = "go generate ./cmd/internal/config"

// OtherEnv describes the environment variables the commands read that are
// not a configuration key. Generate fails when a command reads one that is
// not here, or when one here is read nowhere.
var OtherEnv = map[string]string{
	"MNEMO_OLLAMA_URL": "Where to look for a local Ollama when neither `llm.apiKey` nor `llm.baseURL` is set (default `" + config.DefaultOllamaURL + "`); `mnemo init` offers it too.",
	"USER":             "`mnemo chat`'s memory user when `--user` is not given and it is a valid user name (else `console`); the admin named in the history of a change made with `mnemo memory edit` when `SUDO_USER` is not set.",
	"SUDO_USER":        "The admin named in the history of a change made with `mnemo memory edit` (run through sudo); else `USER`, else `an admin`.",
	"NO_COLOR":         "Set (to anything): the terminal chat shows replies as plain text, without colour.",
	"TERM":             "`dumb`: the terminal chat shows replies as plain text, without colour.",
	"VISUAL":           "The editor of `mnemo memory edit` (run through `sh -c`, so `code --wait` works); else `EDITOR`, else `vi`.",
	"EDITOR":           "The editor of `mnemo memory edit` when `VISUAL` is not set.",
	"TMPDIR":           "Where `mnemo memory edit` makes its private copy (mode 0600).",
}

// Generate returns the reference. configDir is the config package's
// source folder (its doc comments); the platforms' sections are documented
// by the doc comments in their own packages (found from the module root
// above the working directory); cmdDirs are the folders whose non-test Go
// files are searched for the environment variables they read
// (`getenv("NAME")`).
func Generate(configDir string, cmdDirs ...string) ([]byte, error) {
	docs := &docSet{configDir: configDir, byDir: map[string]map[string]string{}}
	if _, err := docs.of(reflect.TypeFor[config.Config]()); err != nil {
		return nil, err
	}
	def := config.Default(registry.Platforms()...)
	other, err := otherEnv(def, cmdDirs)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	section := ""                       // the table being written: a section, or a top-level key
	for _, e := range config.Env(def) { // every key, in file order, the platforms' included
		name, _, nested := strings.Cut(e.Key, ".")
		if !nested {
			name = e.Key
		}
		if name != section {
			section = name
			fmt.Fprintf(&b, "\n### %s\n\n| key | type | default | environment | meaning |\n|---|---|---|---|---|\n", name)
		}
		typeDocs, err := docs.of(e.Struct)
		if err != nil {
			return nil, err
		}
		doc := typeDocs[e.Struct.Name()+"."+e.FieldName]
		if doc == "" {
			return nil, fmt.Errorf("%s.%s (key %s) has no doc comment in %s: write one, it is the key's entry in the reference",
				e.Struct.Name(), e.FieldName, e.Key, docs.dir(e.Struct))
		}
		v := reflect.ValueOf(e.Field).Elem()
		shown := value(v)
		if d, ok := config.Derived[e.Key]; ok {
			shown = d
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s |\n", e.Key, typeName(v.Type()), shown, e.Name, cell(doc))
	}
	b.WriteString(envHeader)
	for _, e := range config.Env(def) {
		syntax := ""
		if t := reflect.TypeOf(e.Field).Elem(); t.Kind() != reflect.String {
			syntax = "; " + envSyntax(t)
		}
		fmt.Fprintf(&b, "| `%s` | overrides `%s`%s |\n", e.Name, e.Key, cell(syntax))
	}
	for _, name := range other {
		fmt.Fprintf(&b, "| `%s` | %s |\n", name, cell(OtherEnv[name]))
	}
	return b.Bytes(), nil
}

const header = `# Configuration reference

<!-- Generated from cmd/internal/config by ` + "`" + RefreshCommand + "`" + `: do not edit; edit the doc comments of config.Config instead. -->

Every key of ` + "`mnemo.yaml`" + `, with its type, default, environment variable and meaning.
mnemo reads ` + "`--config FILE`" + `, or ` + "`./mnemo.yaml`" + ` when present; with neither it runs on
the defaults. Keys are camelCase exactly as written (a misspelt key, wrong case included, stops
start-up naming the file and line); a key left out or empty takes its default. Environment
variables win over the file when set and not blank; prefer them for secrets. Durations need a
unit (` + "`90s`, `2m`, `1h30m`" + `); relative paths are relative to the working directory.

Every key has one environment variable, made by one rule: ` + "`MNEMO_`" + ` and the key in upper
case, ` + "`.`" + ` → ` + "`_`" + ` and an ` + "`_`" + ` before each capital that follows a lower-case letter or
digit (` + "`llm.maxRetries`" + ` → ` + "`MNEMO_LLM_MAX_RETRIES`" + `, ` + "`discord.guildIDs`" + ` →
` + "`MNEMO_DISCORD_GUILD_IDS`" + `), except the ten keys that keep their well-known names
(` + "`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `MNEMO_MODEL`, `SLACK_BOT_TOKEN`" + `, …: the table says
which); the rule's name of one of those is refused, naming the right one. A list is written
with commas (` + "`MNEMO_DISCORD_ALLOW=guild:80351110224678912,role:41771983423143937`" + `) and
` + "`identities`" + ` as ` + "`NAME=ACCOUNT,ACCOUNT`" + ` entries separated by semicolons; a variable replaces
the file's whole list or map. A value the variable cannot hold stops start-up naming the
variable and what to write. When a variable overrides a key the file also sets, mnemo logs
once at start which keys (never their values).
[deploy/mnemo.yaml](../../deploy/mnemo.yaml) is a file with every key at its default; the rules
for reading the file are in [README.md](README.md#configuration).

## Keys
`

const envHeader = `
## Environment variables

| variable | meaning |
|---|---|
`

// docSet reads the doc comments of the packages that declare keys: the
// config package from configDir, a platform's from its own folder.
type docSet struct {
	configDir string
	byDir     map[string]map[string]string
}

// dir is the source folder of the package that declares t.
func (d *docSet) dir(t reflect.Type) string {
	if t.PkgPath() == reflect.TypeFor[config.Config]().PkgPath() {
		return d.configDir
	}
	return packageDir(t.PkgPath())
}

// of maps "Type.Field" to the doc comments of the package declaring t.
func (d *docSet) of(t reflect.Type) (map[string]string, error) {
	dir := d.dir(t)
	if docs, ok := d.byDir[dir]; ok {
		return docs, nil
	}
	docs, err := fieldDocs(dir)
	if err != nil {
		return nil, err
	}
	d.byDir[dir] = docs
	return docs, nil
}

// packageDir is the folder of the package pkgPath of this module: the
// module root is the first folder above the working directory with a
// go.mod naming the module ("" when there is none: then the package's
// doc comments cannot be read, and Generate says so).
func packageDir(pkgPath string) string {
	wd, _ := os.Getwd() // "" (it failed): the search ends at once
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			m := modulePathRe.FindSubmatch(data)
			if m != nil && (pkgPath == string(m[1]) || strings.HasPrefix(pkgPath, string(m[1])+"/")) {
				return filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(pkgPath, string(m[1]))))
			}
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

var modulePathRe = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// fieldDocs maps "Type.Field" of every struct type declared in dir's
// non-test Go files to the field's doc comment (else its line comment),
// joined into one line.
func fieldDocs(dir string) (map[string]string, error) {
	files, err := sources(dir)
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("reading the config struct's doc comments: %w", err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					doc := fl.Doc
					if doc == nil {
						doc = fl.Comment
					}
					for _, id := range fl.Names {
						docs[ts.Name.Name+"."+id.Name] = strings.Join(strings.Fields(doc.Text()), " ")
					}
				}
			}
			return false
		})
	}
	return docs, nil
}

// sources lists dir's non-test Go files.
func sources(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no Go files in %s", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sources: %w", err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") }), nil
}

var getenvRe = regexp.MustCompile(`(?i)getenv\("([A-Z0-9_]+)"\)`)

// otherEnv lists, sorted, the variables dirs' sources read that no key
// of def has, checking each against OtherEnv.
func otherEnv(def *config.Config, dirs []string) ([]string, error) {
	keyed := map[string]bool{}
	for _, e := range config.Env(def) {
		keyed[e.Name] = true
	}
	found := map[string]bool{}
	for _, dir := range dirs {
		files, err := sources(dir)
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			src, err := os.ReadFile(name)
			if err != nil {
				return nil, err
			}
			for _, m := range getenvRe.FindAllSubmatch(src, -1) {
				v := string(m[1])
				if keyed[v] {
					continue
				}
				if OtherEnv[v] == "" {
					return nil, fmt.Errorf("%s reads the environment variable %s, which the reference does not describe: add it to configdoc.OtherEnv", name, v)
				}
				found[v] = true
			}
		}
	}
	for v := range OtherEnv {
		if !found[v] {
			return nil, fmt.Errorf("configdoc.OtherEnv describes %s, which no command reads any more: remove it", v)
		}
	}
	return slices.Sorted(maps.Keys(found)), nil
}

// envSyntax says how the variable of a key of type t is written (as
// config.Parse reads it).
func envSyntax(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "a duration with a unit, e.g. `90s`"
	case t.Kind() == reflect.Int:
		return "decimal digits"
	case t.Kind() == reflect.Bool:
		return "`true` or `false`"
	case t.Kind() == reflect.Slice:
		return "items separated by commas, e.g. `A,B`"
	case t.Kind() == reflect.Map:
		return "`NAME=ACCOUNT,ACCOUNT` entries separated by semicolons, e.g. `zhangsan=slack:T01ABC/U02DEF,discord:80351110224678912;lisi=discord:41771983423143937`"
	}
	return "the value as it is"
}

// typeName is a key's type as the reference shows it.
func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "duration"
	case t.Kind() == reflect.Int:
		return "integer"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem()) + "s"
	case t.Kind() == reflect.Map:
		return "map: name → " + typeName(t.Elem())
	}
	return t.Kind().String()
}

// value is a default as the reference shows it.
func value(v reflect.Value) string {
	if v.IsZero() && (v.Kind() == reflect.String || v.Kind() == reflect.Slice || v.Kind() == reflect.Map) {
		return "empty"
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return "`" + duration(d) + "`"
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// duration writes d in its largest whole unit: 2m, not 2m0s.
func duration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d%u.d == 0 {
			return fmt.Sprintf("%d%s", d/u.d, u.name)
		}
	}
	return d.String()
}

// cell makes text safe in a table cell: a "|" escaped everywhere, and
// outside code spans the "<" and "*" that would start HTML or emphasis.
func cell(text string) string {
	parts := strings.Split(strings.ReplaceAll(text, "|", `\|`), "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", "*", `\*`).Replace(parts[i])
	}
	return strings.Join(parts, "`")
}
