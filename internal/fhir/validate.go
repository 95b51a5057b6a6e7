package fhir

import (
	"bytes"
	_ "embed"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"teleclinic/internal/clinic"
)

// r4Schema is the part of the FHIR R4 JSON Schema that the written types
// reach (Patient, Appointment): 63 definitions, 150 KB, written by
// internal/fhir/r4gen from the official schema. Every resource a client
// writes is validated against its type's definition before it is read.
//
//go:embed r4schema.json
var r4Schema []byte

// r4Schemas are the written types' compiled definitions, compiled on the
// first write (a few milliseconds) and kept.
type r4Schemas struct {
	once  sync.Once
	types map[string]*jsonschema.Schema
	err   error
}

func (v *r4Schemas) compile() {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r4Schema))
	if err != nil {
		v.err = err
		return
	}
	c := jsonschema.NewCompiler()
	if v.err = c.AddResource("r4.json", doc); v.err != nil {
		return
	}
	v.types = map[string]*jsonschema.Schema{}
	for _, t := range []string{"Patient", "Appointment"} {
		if v.types[t], v.err = c.Compile("r4.json#/definitions/" + t); v.err != nil {
			return
		}
	}
}

// validate refuses a written resource of typ that R4 does not admit,
// saying where and why (the first few reasons).
func (v *r4Schemas) validate(typ string, body []byte) error {
	v.once.Do(v.compile)
	if v.err != nil {
		return v.err
	}
	sch := v.types[typ]
	if sch == nil {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return clinic.Errorf(clinic.EInvalid, "The body is not JSON: %s.", err.Error())
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var reasons []string
	for _, line := range strings.Split(err.Error(), "\n")[1:] {
		if line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "-")); line != "" && len(reasons) < 3 {
			reasons = append(reasons, line)
		}
	}
	return clinic.Errorf(clinic.EInvalid, "The %s is not valid FHIR R4: %s.", typ, strings.Join(reasons, "; "))
}
