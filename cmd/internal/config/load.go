package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

const (
	maxFileSize = 1 << 20 // a config file larger than this is refused
	maxProblems = 20      // more problems than this are summarised
)

// Load reads the configuration, with the sections of platforms (each
// platform declares its own: bots/registry lists them). With explicit
// false, path "" means ./mnemo.yaml, and a missing file means defaults
// only; with explicit true (--config given) a missing file is an error.
// getenv nil means os.Getenv.
func Load(path string, explicit bool, getenv func(string) string, platforms ...platform.Platform) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if path == "" {
		if explicit {
			return nil, errors.New("--config needs a file name")
		}
		path = DefaultFile
	}
	data, err := readFile(path)
	switch {
	case err == nil:
	case !explicit && errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("config file %s does not exist; write one with mnemo --config %s init, or copy deploy/mnemo.yaml", path, path)
	default:
		return nil, err
	}
	return Parse(path, data, getenv, platforms...)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("config file %s is larger than %d bytes; is it the right file?", path, maxFileSize)
	}
	return data, nil
}

// Parse is Load after the file has been read; file names it in messages.
// Every problem is reported, each on its own line naming the file, line and
// key.
func Parse(file string, data []byte, getenv func(string) string, platforms ...platform.Platform) (*Config, error) {
	c := Default(platforms...)
	c.LLM.ReflectorModel, c.State.Dir = "", "" // derived unless set
	d := &decoder{file: file, origin: map[string]string{}, seen: map[*yaml.Node]bool{}, schema: newSchema(c)}
	d.decode(data, c)
	if err := joinProblems(d.problems); err != nil {
		return nil, err
	}
	overridden := d.applyEnv(c, getenv)
	if err := joinProblems(d.problems); err != nil {
		return nil, err
	}
	c.complete()
	c.overridden = overridden
	if err := c.validate(d.origin); err != nil {
		return nil, err
	}
	return c, nil
}

// problem is one message and the file line it is about (0: none).
type problem struct {
	line int
	msg  string
}

// joinProblems makes one error of problems, in file order (those without a
// line last), at most maxProblems of them.
func joinProblems(ps []problem) error {
	if len(ps) == 0 {
		return nil
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].line != 0 && (ps[j].line == 0 || ps[i].line < ps[j].line) })
	var msgs []string
	for _, p := range ps[:min(len(ps), maxProblems)] {
		msgs = append(msgs, p.msg)
	}
	if len(ps) > maxProblems {
		msgs = append(msgs, fmt.Sprintf("... and %d more problems", len(ps)-maxProblems))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// schema maps every dotted key to its field in a Config's view and every
// section type, as yaml.v3 names it in errors, to its key.
type schema struct {
	keys     []string // sections included, in declaration order
	field    map[string][]int
	typ      map[string]string // key → Go type, as yaml.v3 names it in errors
	section  map[string]string
	examples map[string]string // list key → a list of it, for "expected a list"
}

// newSchema is the schema of c's keys, its platforms' sections included.
func newSchema(c *Config) *schema {
	s := &schema{field: map[string][]int{}, typ: map[string]string{}, section: map[string]string{},
		examples: map[string]string{}}
	s.add(c.view().Type(), "", nil)
	for _, p := range c.platforms {
		if ex, ok := p.v.(interface{ ListExamples() map[string]string }); ok {
			maps.Copy(s.examples, ex.ListExamples())
		}
	}
	return s
}

// typeOf is the Go type key decodes into: a field's, or that of a list
// item or an identities name; "" for a key mnemo does not know.
func (s *schema) typeOf(key string) string {
	if t, ok := s.typ[key]; ok {
		return t
	}
	if i := strings.LastIndex(key, "["); i > 0 && s.typeOf(key[:i]) == "[]string" {
		return "string"
	}
	if name, ok := strings.CutPrefix(key, "identities."); ok && !strings.ContainsAny(name, "[") {
		return "[]string"
	}
	return ""
}

func (s *schema) add(t reflect.Type, prefix string, index []int) {
	s.section[t.String()] = prefix
	for i := range t.NumField() {
		f := t.Field(i) // all exported: the view's, or a section's keys
		ft := f.Type
		if ft.Kind() == reflect.Pointer { // the view's pointers to Config's fields
			ft = ft.Elem()
		}
		key := joinKey(prefix, f.Tag.Get("yaml"))
		idx := append(slices.Clone(index), i)
		s.keys, s.field[key], s.typ[key] = append(s.keys, key), idx, ft.String()
		if ft.Kind() == reflect.Struct {
			s.add(ft, key, idx)
		}
	}
}

// decoder reads one file into a Config: yaml.v3 decodes it, and the parsed
// node tree says which key each of its errors is about.
type decoder struct {
	file     string
	problems []problem
	origin   map[string]string // key → "file:line" or "env NAME"
	schema   *schema
	entries  []entry             // every key and list item of the file
	seen     map[*yaml.Node]bool // nodes already reported or decoded here
}

// entry is a key (or list item, "a[1]") and its value node in the file.
type entry struct {
	key        string
	keyNode, n *yaml.Node // keyNode nil for a list item
}

func (d *decoder) add(line int, format string, args ...any) {
	at := d.file + ": "
	if line > 0 {
		at = fmt.Sprintf("%s:%d: ", d.file, line)
	}
	d.problems = append(d.problems, problem{line, at + fmt.Sprintf(format, args...)})
}

func (d *decoder) decode(data []byte, c *Config) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, extra yaml.Node
	if err := safeDecode(dec, &doc); err != nil {
		if err != io.EOF {
			d.syntaxError(data, err)
		}
		return
	}
	switch err := safeDecode(dec, &extra); {
	case err == io.EOF:
	case err != nil:
		d.syntaxError(data, err)
		return
	default:
		d.add(extra.Line, "a second YAML document starts here; a config file holds one document (remove the \"---\" and merge the keys)")
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	d.walk(doc.Content[0], "")
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	view := c.view()
	err := safeDecode(strict, view.Addr().Interface())
	d.scalars(view) // after yaml.v3, whose values it replaces
	var te *yaml.TypeError
	switch {
	case errors.As(err, &te):
		for _, msg := range te.Errors {
			d.typeError(msg)
		}
	case err != nil:
		d.add(0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
}

// safeDecode turns a panic in the YAML parser into an error.
func safeDecode(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the YAML parser failed: %v", r)
		}
	}()
	return dec.Decode(v)
}

var yamlErrLine = text.NewRegexp(`(?s)^line (\d+): (.*)$`)

func (d *decoder) syntaxError(data []byte, err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlErrLine.Get().FindStringSubmatch(msg); m != nil {
		msg = m[2]
	}
	// yaml.v3 places a parser error at the start of the enclosing block,
	// lines before the mistake (a key indented too little, say), and a
	// scanner error on no line at all: the line where the text first fails
	// this way is where the mistake is.
	line := failingLine(data, err.Error())
	if line > 0 && strings.Contains(msg, "cannot start any token") {
		if lines := bytes.Split(data, []byte("\n")); bytes.Contains(lines[line-1], []byte("\t")) {
			msg += " (a tab: YAML is indented with spaces only)"
		}
	}
	d.add(line, "YAML syntax error: %s", msg)
}

// failingLine is a line n (the first, when the text keeps failing once it
// does) such that the text up to line n fails to parse with message msg,
// or 0.
func failingLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	k := sort.Search(len(lines), func(i int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:i+1], nil)))
		for {
			var n yaml.Node
			if err := safeDecode(dec, &n); err != nil {
				return err != io.EOF && err.Error() == msg
			}
		}
	})
	if k == len(lines) {
		return 0
	}
	return k + 1
}

// deref is the node an alias stands for (never itself an alias), or n.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { n = deref(n); return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// walk records every key and list item under n with its line (aliases are
// not followed) and reports what yaml.v3 would accept but mnemo does not:
// keys that are not plain names, merge keys, empty list items.
func (d *decoder) walk(n *yaml.Node, key string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 { // key, value, key, value...
			k, v := n.Content[i], n.Content[i+1]
			switch dk := deref(k); {
			case dk.Kind != yaml.ScalarNode:
				d.reject(k, "a key in %s is %s; keys must be plain names", section(key), describe(dk))
				continue
			case dk.Tag == "!!merge":
				d.reject(k, "merge keys (\"<<\") are not supported in %s; write the keys out", section(key))
				continue
			}
			full := joinKey(key, deref(k).Value)
			d.entries = append(d.entries, entry{full, k, v})
			if !isNull(v) {
				d.origin[full] = fmt.Sprintf("%s:%d", d.file, k.Line)
			}
			d.walk(v, full)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			full := fmt.Sprintf("%s[%d]", key, i)
			d.entries = append(d.entries, entry{full, nil, item})
			switch {
			case isNull(item) && strings.HasPrefix(key, "identities."):
				d.reject(item, "%s: expected an account such as \"slack:T01ABC/U02DEF\" or \"discord:80351110224678912\", got a single value", full)
			case isNull(item):
				d.reject(item, "%s: the item is empty; give a value or remove the \"-\"", full)
			default:
				d.origin[full] = fmt.Sprintf("%s:%d", d.file, item.Line)
				d.walk(item, full)
			}
		}
	}
}

func (d *decoder) reject(n *yaml.Node, format string, args ...any) {
	d.seen[deref(n)] = true
	d.add(n.Line, format, args...)
}

// scalars decodes the integer and boolean keys more strictly than yaml.v3
// (which reads 1.5 as 1 and yes as true) and more kindly (a quoted "20" is
// 20, a quoted "true" true): a scalar of the key's own tag (1_000, 0x400,
// True) or a quoted decimal, true or false. yaml.v3's own errors about
// these nodes are then ignored.
func (d *decoder) scalars(root reflect.Value) {
	for _, e := range d.entries {
		idx, ok := d.schema.field[e.key]
		if !ok || isNull(e.n) {
			continue
		}
		f, err := root.FieldByIndexErr(idx)
		if err != nil { // in a section set to null: nothing to decode
			continue
		}
		if f.Kind() == reflect.Pointer { // a top-level key, through the view
			f = f.Elem()
		}
		n := deref(e.n)
		kind, s := f.Kind(), strings.TrimSpace(n.Value)
		tag, want := "!!int", "an integer"
		if kind == reflect.Bool {
			tag, want = "!!bool", "true or false"
		}
		switch {
		case kind != reflect.Int && kind != reflect.Bool:
			continue
		case n.Kind != yaml.ScalarNode || (n.Tag != tag && n.Tag != "!!str"):
			ok = false
		case n.Tag == tag:
			ok = n.Decode(f.Addr().Interface()) == nil
		case kind == reflect.Int:
			i, err := strconv.Atoi(s)
			f.SetInt(int64(i))
			ok = err == nil
		default:
			f.SetBool(s == "true")
			ok = s == "true" || s == "false"
		}
		d.seen[n] = true
		if !ok {
			got := describe(n)
			if n.Kind == yaml.ScalarNode {
				got = quote(n.Value) // an int or bool key holds no secret
			}
			d.add(e.n.Line, "%s: expected %s, got %s", e.key, want, got)
		}
	}
}
