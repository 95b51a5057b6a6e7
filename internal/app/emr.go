package app

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// The medical-record sections and the shape of their data (spec: EMR
// sections). One description drives both the validation of writes and the
// JSON Schema GET /emr/schema serves, so the two cannot disagree.
type emrField struct {
	Name     string
	Kind     string // string, integer or strings (an array of strings)
	Required bool
}

type emrShape struct {
	Array  bool // an array of objects, else one object
	Fields []emrField
	Title  string
}

var emrShapes = map[string]emrShape{
	"conditions":        {Array: true, Title: "Current and past conditions", Fields: []emrField{{"condition", "string", true}}},
	"surgeries":         {Array: true, Title: "Past surgeries", Fields: []emrField{{"procedure", "string", true}}},
	"allergies":         {Array: true, Title: "Allergies", Fields: []emrField{{"substance", "string", true}}},
	"medications":       {Array: true, Title: "Current medications", Fields: []emrField{{"name", "string", true}}},
	"family_conditions": {Array: true, Title: "Conditions in the family", Fields: []emrField{{"condition", "string", true}, {"relations", "strings", true}}},
	"social_history": {Title: "Social history", Fields: []emrField{{"marital_status", "string", false}, {"highest_ed", "string", false},
		{"occupation", "string", false}, {"num_kids", "integer", false}}},
	"health_habits": {Title: "Health habits", Fields: []emrField{{"smoking", "string", false}, {"alcohol", "string", false},
		{"drugs", "string", false}, {"exercise", "string", false}}},
}

// EMRSectionNames lists the sections in a stable order.
func EMRSectionNames() []string {
	names := make([]string, 0, len(emrShapes))
	for n := range emrShapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const (
	maxEMRItems  = 200
	maxEMRString = 1000
)

// validate checks data against the shape and returns it in canonical form
// (integers as integers). Errors name the offending field by its path.
func (sh emrShape) validate(data any) (any, error) {
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	if !sh.Array {
		obj, ok := data.(map[string]any)
		if !ok {
			return nil, bad("data must be an object with %s.", sh.fieldList())
		}
		return sh.object("data", obj)
	}
	arr, ok := data.([]any)
	if !ok {
		return nil, bad("data must be an array of objects with %s.", sh.fieldList())
	}
	if len(arr) > maxEMRItems {
		return nil, bad("data holds at most %d entries.", maxEMRItems)
	}
	out := make([]any, len(arr))
	for i, it := range arr {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, bad("data[%d] must be an object with %s.", i, sh.fieldList())
		}
		v, err := sh.object(fmt.Sprintf("data[%d]", i), obj)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (sh emrShape) fieldList() string {
	names := make([]string, len(sh.Fields))
	for i, f := range sh.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func (sh emrShape) object(at string, obj map[string]any) (map[string]any, error) {
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	known := map[string]emrField{}
	for _, f := range sh.Fields {
		known[f.Name] = f
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			return nil, bad("%s.%s is not a field of this section (fields: %s).", at, k, sh.fieldList())
		}
	}
	out := map[string]any{}
	for _, f := range sh.Fields {
		v, present := obj[f.Name]
		path := at + "." + f.Name
		if !present || v == nil {
			if f.Required {
				return nil, bad("%s is required.", path)
			}
			continue
		}
		switch f.Kind {
		case "string":
			s, ok := v.(string)
			if !ok {
				return nil, bad("%s must be a string.", path)
			}
			s = strings.TrimSpace(s)
			if f.Required && s == "" {
				return nil, bad("%s must not be empty.", path)
			}
			if len(s) > maxEMRString {
				return nil, bad("%s is longer than %d characters.", path, maxEMRString)
			}
			out[f.Name] = s
		case "integer":
			n, ok := jsonInt(v)
			if !ok || n < 0 || n > 100 {
				return nil, bad("%s must be a whole number from 0 to 100.", path)
			}
			out[f.Name] = n
		case "strings":
			arr, ok := v.([]any)
			if !ok {
				return nil, bad("%s must be an array of strings.", path)
			}
			ss := make([]string, 0, len(arr))
			for i, x := range arr {
				s, ok := x.(string)
				if !ok || strings.TrimSpace(s) == "" || len(s) > maxEMRString {
					return nil, bad("%s[%d] must be a non-empty string.", path, i)
				}
				ss = append(ss, strings.TrimSpace(s))
			}
			out[f.Name] = ss
		}
	}
	return out, nil
}

// jsonInt reads a whole number from a decoded JSON value (json.Number,
// float64 or a numeric string, as lenient clients send).
func jsonInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return int64(f), err == nil && f == math.Trunc(f)
	case float64:
		return int64(x), x == math.Trunc(x)
	case string:
		var n int64
		_, err := fmt.Sscanf(x, "%d", &n)
		return n, err == nil && fmt.Sprint(n) == strings.TrimSpace(x)
	}
	return 0, false
}

// EMRSchema is the JSON Schema of each section's data (GET /emr/schema).
func EMRSchema() map[string]any {
	out := map[string]any{}
	for name, sh := range emrShapes {
		props := map[string]any{}
		required := []string{}
		for _, f := range sh.Fields {
			switch f.Kind {
			case "string":
				props[f.Name] = map[string]any{"type": "string", "maxLength": maxEMRString}
			case "integer":
				props[f.Name] = map[string]any{"type": "integer", "minimum": 0, "maximum": 100}
			case "strings":
				props[f.Name] = map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}}
			}
			if f.Required {
				required = append(required, f.Name)
			}
		}
		obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			obj["required"] = required
		}
		schema := obj
		if sh.Array {
			schema = map[string]any{"type": "array", "maxItems": maxEMRItems, "items": obj}
		}
		schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
		schema["title"] = sh.Title
		out[name] = schema
	}
	return out
}

// EMRSection is a section as read: never-written sections have empty data
// and no modification.
type EMRSection struct {
	Name            string
	Data            any
	DataNotReported *bool
	Modified        int64
	ModifiedBy      *clinic.User
}

// GetEMR is GET /users/{id}/emr: all seven sections.
func (a *App) GetEMR(ctx context.Context, p *clinic.Principal, userID int64) (map[string]*EMRSection, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.getEMR(ctx, p, userID)
	return out, a.AuditOutcome(ctx, p, "emr.read", "user", i64s(userID), err)
}

func (a *App) getEMR(ctx context.Context, p *clinic.Principal, userID int64) (map[string]*EMRSection, error) {
	u, err := a.recordOwner(ctx, p, userID, readRecords, false)
	if err != nil {
		return nil, err
	}
	rows, err := a.store.Read().EMR(ctx, p.Account.ID, u.ID)
	if err != nil {
		return nil, fmt.Errorf("emr: %w", err)
	}
	out := map[string]*EMRSection{}
	for name, sh := range emrShapes {
		s := &EMRSection{Name: name, Data: map[string]any{}}
		if sh.Array {
			s.Data = []any{}
		}
		out[name] = s
	}
	// Who last changed each section, in one read.
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ModifiedBy
	}
	users, err := a.store.Read().UsersByIDs(ctx, p.Account.ID, ids)
	if err != nil {
		return nil, fmt.Errorf("emr: %w", err)
	}
	for _, r := range rows {
		s, ok := out[r.Name]
		if !ok {
			continue
		}
		var data any
		if err := json.Unmarshal(r.Data, &data); err != nil {
			return nil, fmt.Errorf("emr %s: %w", r.Name, err)
		}
		nr := r.DataNotReported
		s.Data, s.DataNotReported, s.Modified, s.ModifiedBy = data, &nr, r.Modified, users[r.ModifiedBy]
	}
	return out, nil
}

// PutEMR is POST /users/{id}/emr/{name}: the section is replaced whole.
// data_not_reported true records that the patient declined to declare it
// (data may then be empty).
func (a *App) PutEMR(ctx context.Context, p *clinic.Principal, userID int64, name string, data any, hasData bool, notReported *bool) (*EMRSection, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	s, err := a.putEMR(ctx, p, userID, name, data, hasData, notReported)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "emr.write", "emr", i64s(userID)+"/"+name, err)
	}
	return s, nil
}

func (a *App) putEMR(ctx context.Context, p *clinic.Principal, userID int64, name string, data any, hasData bool, notReported *bool) (*EMRSection, error) {
	sh, ok := emrShapes[name]
	if !ok {
		return nil, clinic.Errorf(clinic.ENotFound, "No EMR section %q; the sections are %s.", name, strings.Join(EMRSectionNames(), ", "))
	}
	u, err := a.recordOwner(ctx, p, userID, writeRecords, true)
	if err != nil {
		return nil, err
	}
	if notReported == nil {
		return nil, clinic.Errorf(clinic.EInvalid, "data_not_reported is required (true when the patient declines to declare this section).")
	}
	if !hasData {
		return nil, clinic.Errorf(clinic.EInvalid, "data is required: %s.", map[bool]string{true: "an array", false: "an object"}[sh.Array])
	}
	clean, err := sh.validate(data)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(clean)
	if err != nil {
		return nil, fmt.Errorf("emr: %w", err)
	}
	row := clinic.EMRSection{Name: name, Data: raw, DataNotReported: *notReported, Modified: a.Unix(), ModifiedBy: p.UserID()}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.PutEMR(ctx, p.Account.ID, u.ID, row); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "emr.write", "emr", i64s(u.ID)+"/"+name, OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("emr: %w", err)
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return &EMRSection{Name: name, Data: out, DataNotReported: notReported, Modified: row.Modified, ModifiedBy: p.User}, nil
}
