package mnemo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// NewTool builds a Tool from its parameters' Go type, the one description
// of a tool's arguments: the JSON Schema the model is sent is generated
// from P, and Call decodes the model's arguments into a P strictly before
// call sees them.
//
// P must be a struct. Its exported fields are the properties, named and
// made optional as encoding/json sees them: the json tag's name (or the
// field's), required unless the tag says omitempty or omitzero, and "-"
// left out. Two more tags describe a field to the model: desc:"..." is its
// description, and minItems:"n" (on a slice) its minItems. Fields may be
// strings, bools, numbers, slices of these, or structs built the same way;
// every object in the schema has additionalProperties false.
//
// Arguments that are not one JSON object matching P (an unknown field, a
// wrong type, data after the object, a required field missing, at any
// depth) never reach call: the error, returned to the model as the tool's
// result, names the problem and shows the schema. Empty arguments count as
// {}. minItems is a hint to the model, not checked here, so call gives its
// own answer to an empty list.
//
// NewTool panics if P cannot be described (a field of an unsupported kind,
// an embedded struct, a bad minItems): a programming mistake that every
// test building the tool catches, as regexp.MustCompile does.
func NewTool[P any](name, description string, call func(ctx context.Context, p P) (string, error)) Tool {
	t := reflect.TypeFor[P]()
	schema := schemaFor(name, t)
	return Tool{Name: name, Description: description, Parameters: schema,
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var p P
			if err := decodeArgs(t, raw, &p); err != nil {
				return "", fmt.Errorf("%s: bad arguments (%v); expected JSON matching %s", name, err, schema)
			}
			return call(ctx, p)
		}}
}

// schemas caches the encoded schema of each parameter type: the memory
// tools are built for every message (they close over its scope), and the
// schema depends on the type alone. Callers only read Parameters.
var schemas sync.Map // reflect.Type → []byte

// schemaFor is the encoded JSON Schema of t, from the cache when t was
// described before; it panics as NewTool documents.
func schemaFor(name string, t reflect.Type) []byte {
	if b, ok := schemas.Load(t); ok {
		return b.([]byte)
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("mnemo.NewTool %s: parameters %v must be a struct, the JSON object the model sends", name, t))
	}
	s, err := schemaOf(t)
	if err != nil {
		panic(fmt.Sprintf("mnemo.NewTool %s: parameters %v: %v", name, t, err))
	}
	b := encode(s)
	schemas.Store(t, b)
	return b
}

// schema is the subset of JSON Schema NewTool generates. The field order
// is the order of the keys in the JSON the model sees.
type schema struct {
	Type                 string      `json:"type"`
	Description          string      `json:"description,omitempty"`
	MinItems             int         `json:"minItems,omitempty"`
	Items                *schema     `json:"items,omitempty"`
	Properties           *properties `json:"properties,omitempty"`
	Required             []string    `json:"required,omitempty"`
	AdditionalProperties *bool       `json:"additionalProperties,omitempty"`
}

// properties keep the fields' declaration order, so the model reads them
// in the order the tool's author wrote them (a map would sort them).
type properties []property

type property struct {
	name   string
	schema *schema
}

func (ps properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encode(p.name))
		b.WriteByte(':')
		b.Write(encode(p.schema))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode is v as compact JSON, with <, > and & left as they are: the
// schema is read by a model (and shown in error texts), not put in HTML.
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, ints, bools and schemas of them: cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// field is one property of a struct as encoding/json decodes it.
type field struct {
	index    int
	name     string
	required bool
	desc     string
	minItems int
}

// fieldsOf lists the properties of struct type t, or says why one cannot
// be described.
func fieldsOf(t reflect.Type) ([]field, error) {
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, fmt.Errorf("embedded field %s: not supported; name the field", sf.Name)
		}
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f := field{index: i, name: name, required: true, desc: sf.Tag.Get("desc")}
		for o := range strings.SplitSeq(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				f.required = false
			}
		}
		if v, ok := sf.Tag.Lookup("minItems"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || sf.Type.Kind() != reflect.Slice {
				return nil, fmt.Errorf("field %s: minItems:%q must be a count of 0 or more on a slice", sf.Name, v)
			}
			f.minItems = n
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// schemaOf describes Go type t as JSON Schema.
func schemaOf(t reflect.Type) (*schema, error) {
	switch t.Kind() {
	case reflect.String:
		return &schema{Type: "string"}, nil
	case reflect.Bool:
		return &schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &schema{Type: "number"}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, fmt.Errorf("%v: a []byte is base64 text to encoding/json; use a string", t)
		}
		items, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &schema{Type: "array", Items: items}, nil
	case reflect.Struct:
		fs, err := fieldsOf(t)
		if err != nil {
			return nil, err
		}
		no := false
		s := &schema{Type: "object", Properties: &properties{}, AdditionalProperties: &no}
		for _, f := range fs {
			fsch, err := schemaOf(t.Field(f.index).Type)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", t.Field(f.index).Name, err)
			}
			fsch.Description, fsch.MinItems = f.desc, f.minItems
			*s.Properties = append(*s.Properties, property{f.name, fsch})
			if f.required {
				s.Required = append(s.Required, f.name)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("%v: kind %v is not supported", t, t.Kind())
}

// decodeArgs decodes a model's JSON arguments into v (a *P, t being P)
// strictly: unknown fields, wrong types, trailing data and missing
// required fields are errors.
func decodeArgs(t reflect.Type, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("extra data after the JSON object")
	}
	// encoding/json leaves a missing field at its zero value; look at the
	// keys themselves. Keys must match exactly, as the schema names them.
	var tree any
	_ = json.Unmarshal(raw, &tree) // already decoded once: valid JSON
	return checkRequired(t, tree, "")
}

// checkRequired reports the first required field missing from v, the
// decoded JSON at path at, of Go type t. A null object has no fields.
func checkRequired(t reflect.Type, v any, at string) error {
	switch t.Kind() {
	case reflect.Struct:
		obj, _ := v.(map[string]any)
		fs, _ := fieldsOf(t) // t was described by schemaOf: cannot fail
		for _, f := range fs {
			where := f.name
			if at != "" {
				where = at + "." + f.name
			}
			fv, ok := obj[f.name]
			if !ok {
				if f.required {
					return fmt.Errorf("missing %q", where)
				}
				continue
			}
			if err := checkRequired(t.Field(f.index).Type, fv, where); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, _ := v.([]any)
		for i, e := range arr {
			if err := checkRequired(t.Elem(), e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
