package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// DeviceTypes are the device type values (spec: Device and health measurement).
var DeviceTypes = []string{"vendorA_po_po3", "vendorA_scale_hs2", "vendorB_health", "vendorC_health", "vendorD_bp_bp100", "vendorA_bg_bg5s", "vendorA_thermometer_pt3sbt"}

func isDeviceType(t string) bool {
	for _, d := range DeviceTypes {
		if d == t {
			return true
		}
	}
	return false
}

// A measurement's fields by data_type: each value field with its unit
// field, the units allowed and the plausible range in each unit. The ranges
// refuse typing errors and unit mix-ups, not unusual patients.
type measure struct {
	class  string
	fields []measureField
}

type measureField struct {
	name    string
	kind    string // number, integer, string, flag (0/1)
	unit    string // the unit field's name, if any
	ranges  map[string][2]float64
	noUnits bool // the unit field takes any text (noise)
}

var measures = map[string]measure{
	"temperature_body": {"body", []measureField{{name: "temperature_body", kind: "number", unit: "temperature_unit",
		ranges: map[string][2]float64{"cel": {25, 45}, "fah": {77, 113}}}}},
	"bg": {"body", []measureField{{name: "bg", kind: "number", unit: "bg_unit",
		ranges: map[string][2]float64{"mg/dL": {10, 1000}, "mmol/L": {0.5, 55}}}}},
	"bp": {"body", []measureField{
		{name: "hp", kind: "integer", unit: "bp_unit", ranges: map[string][2]float64{"mmHg": {40, 300}, "kPa": {5, 40}}},
		{name: "lp", kind: "integer", unit: "bp_unit", ranges: map[string][2]float64{"mmHg": {20, 200}, "kPa": {3, 27}}}}},
	"weight": {"body", []measureField{{name: "weight", kind: "number", unit: "weight_unit",
		ranges: map[string][2]float64{"kg": {0.2, 700}, "lbs": {0.5, 1500}}}}},
	"active_minutes": {"body", []measureField{{name: "active_minutes", kind: "integer", ranges: map[string][2]float64{"": {0, 1440}}}}},
	"steps":          {"body", []measureField{{name: "steps", kind: "integer", ranges: map[string][2]float64{"": {0, 200000}}}}},
	"hr":             {"body", []measureField{{name: "hr", kind: "number", ranges: map[string][2]float64{"": {20, 300}}}}},
	"bo":             {"body", []measureField{{name: "bo", kind: "number", ranges: map[string][2]float64{"": {50, 100}}}}},
	"illuminance": {"environment", []measureField{{name: "illuminance", kind: "number", unit: "illuminance_unit",
		ranges: map[string][2]float64{"lux": {0, 200000}}}}},
	"humidity": {"environment", []measureField{{name: "humidity", kind: "number", unit: "humidity_unit",
		ranges: map[string][2]float64{"percentage": {0, 100}}}}},
	"gas":      {"environment", []measureField{{name: "gas", kind: "string"}}},
	"movement": {"environment", []measureField{{name: "movement", kind: "flag"}}},
	"noise": {"environment", []measureField{{name: "noise", kind: "number", unit: "noise_unit", noUnits: true,
		ranges: map[string][2]float64{"": {0, 1}}}}},
	"range": {"environment", []measureField{{name: "range", kind: "number", unit: "range_unit",
		ranges: map[string][2]float64{"cm": {2, 400}}}}},
}

// measurementFields is every value and unit field of POST /health.
var measurementFields = func() map[string]bool {
	m := map[string]bool{}
	for _, ms := range measures {
		for _, f := range ms.fields {
			m[f.name] = true
			if f.unit != "" {
				m[f.unit] = true
			}
		}
	}
	return m
}()

// MeasurementFieldNames lists the value and unit fields, for the handler.
func MeasurementFieldNames() []string {
	out := make([]string, 0, len(measurementFields))
	for k := range measurementFields {
		out = append(out, k)
	}
	return out
}

// HealthInput is POST /health: the common fields, and the measurement
// fields as the client sent them (strings from forms, typed from JSON).
type HealthInput struct {
	Type, Date, DeviceID, DataType, DataClass string
	Time                                      any
	Values                                    map[string]any
}

// RegisterDevice is POST /users/{user_id}/devices. Registering a device id
// again renames it.
func (a *App) RegisterDevice(ctx context.Context, p *clinic.Principal, userID int64, deviceID, name, typ string) (*clinic.Device, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	d, err := a.registerDevice(ctx, p, userID, deviceID, name, typ)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "device.register", "user", i64s(userID), err)
	}
	return d, nil
}

func (a *App) registerDevice(ctx context.Context, p *clinic.Principal, userID int64, deviceID, name, typ string) (*clinic.Device, error) {
	u, err := a.recordOwner(ctx, p, userID, ownRecords, true)
	if err != nil {
		return nil, err
	}
	if err := CheckFields(Line("device_id", deviceID, 128), Line("device_name", name, 200)); err != nil {
		return nil, err
	}
	deviceID, name = strings.TrimSpace(deviceID), strings.TrimSpace(name)
	switch {
	case deviceID == "" || len(deviceID) > 128:
		return nil, clinic.Errorf(clinic.EInvalid, "device_id is required (at most 128 characters).")
	case name == "" || len(name) > 200:
		return nil, clinic.Errorf(clinic.EInvalid, "device_name is required (at most 200 characters).")
	case !isDeviceType(typ):
		return nil, clinic.Errorf(clinic.EInvalid, "type must be one of %s.", strings.Join(DeviceTypes, ", "))
	}
	d := &clinic.Device{UserID: u.ID, DeviceID: deviceID, Name: name, Type: typ, Created: a.Unix()}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UpsertDevice(ctx, p.Account.ID, d); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "device.register", "device", i64s(d.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	return d, nil
}

// Devices is GET /users/{id}/devices (extension).
func (a *App) Devices(ctx context.Context, p *clinic.Principal, userID int64) ([]*clinic.Device, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	u, err := a.recordOwner(ctx, p, userID, readRecords, false)
	if err == nil {
		var ds []*clinic.Device
		if ds, err = a.store.Read().Devices(ctx, p.Account.ID, u.ID); err == nil {
			return ds, a.AuditOutcome(ctx, p, "device.list", "user", i64s(userID), nil)
		}
	}
	return nil, a.AuditOutcome(ctx, p, "device.list", "user", i64s(userID), err)
}

// AddReading is POST /health: a measurement from one of the caller's
// registered devices, every field checked against its data_type.
func (a *App) AddReading(ctx context.Context, p *clinic.Principal, in HealthInput) (*clinic.Reading, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	r, err := a.addReading(ctx, p, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "health.add", "user", i64s(p.UserID()), err)
	}
	return r, nil
}

func (a *App) addReading(ctx context.Context, p *clinic.Principal, in HealthInput) (*clinic.Reading, error) {
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	ms, ok := measures[in.DataType]
	if !ok {
		return nil, bad("data_type is required: one of temperature_body, bg, bp, weight, active_minutes, steps, hr, bo, illuminance, humidity, gas, movement, noise, range.")
	}
	if !isDeviceType(in.Type) {
		return nil, bad("type must be the device type: one of %s.", strings.Join(DeviceTypes, ", "))
	}
	if in.DataClass != ms.class {
		return nil, bad("data_class must be %s for %s.", ms.class, in.DataType)
	}
	day, err := time.Parse("2006-01-02", in.Date)
	if err != nil {
		return nil, bad("date is required as YYYY-MM-DD.")
	}
	ts, ok := jsonInt(normNumber(in.Time))
	if !ok || ts <= 0 {
		return nil, bad("time is required as a UNIX timestamp.")
	}
	if ts > a.Unix()+86400 {
		return nil, bad("time is in the future.")
	}
	if d := time.Unix(ts, 0).UTC().Sub(day); d < -14*time.Hour || d > 38*time.Hour {
		return nil, bad("date %s and time %d are not the same day.", in.Date, ts)
	}
	if strings.TrimSpace(in.DeviceID) == "" {
		return nil, bad("device_id is required.")
	}
	dev, err := a.store.Read().DeviceByDeviceID(ctx, p.Account.ID, p.UserID(), in.DeviceID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, bad("device_id %q is not registered: register it with POST /users/-/devices first.", in.DeviceID)
	}
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	if dev.Type != in.Type {
		return nil, bad("type %s is not the registered type of device %s (%s).", in.Type, in.DeviceID, dev.Type)
	}
	values, err := ms.check(in.DataType, in.Values)
	if err != nil {
		return nil, err
	}
	r := &clinic.Reading{UserID: p.UserID(), DeviceID: in.DeviceID, Type: in.Type, DataType: in.DataType, DataClass: in.DataClass,
		Date: in.Date, Time: ts, Values: values, Created: a.Unix()}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.AddReading(ctx, p.Account.ID, r); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "health.add", "reading", i64s(r.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	return r, nil
}

// check validates the measurement fields of one data_type: its own fields
// are required and in range for their unit; any other measurement field is
// refused, so a reading cannot carry values it is not about.
func (ms measure) check(dataType string, vals map[string]any) (map[string]any, error) {
	mine := map[string]bool{}
	for _, f := range ms.fields {
		mine[f.name] = true
		if f.unit != "" {
			mine[f.unit] = true
		}
	}
	for k := range vals {
		if !mine[k] {
			return nil, badReading("%s does not belong to a %s reading.", k, dataType)
		}
	}
	out := map[string]any{}
	for _, f := range ms.fields {
		raw, ok := vals[f.name]
		if !ok || raw == nil || raw == "" {
			return nil, badReading("%s is required for a %s reading.", f.name, dataType)
		}
		unit, err := f.checkUnit(vals, out)
		if err != nil {
			return nil, err
		}
		if out[f.name], err = f.checkValue(raw, unit); err != nil {
			return nil, err
		}
	}
	if dataType == "bp" && out["hp"].(int64) <= out["lp"].(int64) {
		return nil, badReading("hp (systolic) must be higher than lp (diastolic).")
	}
	return out, nil
}

func badReading(format string, args ...any) error {
	return clinic.Errorf(clinic.EInvalid, format, args...)
}

// checkUnit is the unit the field's value is in, kept in out: one of its
// ranges' (required), any text (noUnits), or none.
func (f measureField) checkUnit(vals, out map[string]any) (string, error) {
	if f.unit == "" {
		return "", nil
	}
	u, _ := vals[f.unit].(string)
	switch {
	case f.noUnits:
		if u != "" {
			out[f.unit] = u
		}
		return "", nil
	case u == "":
		return "", badReading("%s is required with %s: one of %s.", f.unit, f.name, unitList(f.ranges))
	}
	if _, ok := f.ranges[u]; !ok {
		return "", badReading("%s must be one of %s.", f.unit, unitList(f.ranges))
	}
	out[f.unit] = u
	return u, nil
}

// checkValue is the field's value raw as its kind stores it, in range for
// unit.
func (f measureField) checkValue(raw any, unit string) (any, error) {
	switch f.kind {
	case "string":
		s, ok := raw.(string)
		if !ok || strings.TrimSpace(s) == "" || len(s) > 200 {
			return nil, badReading("%s must be a non-empty string.", f.name)
		}
		return strings.TrimSpace(s), nil
	case "flag":
		switch fmt.Sprint(normNumber(raw)) {
		case "0", "false":
			return 0, nil
		case "1", "true":
			return 1, nil
		}
		return nil, badReading("%s must be 0 or 1.", f.name)
	}
	v, ok := jsonFloat(normNumber(raw))
	if !ok {
		return nil, badReading("%s must be a number.", f.name)
	}
	if f.kind == "integer" && v != math.Trunc(v) {
		return nil, badReading("%s must be a whole number.", f.name)
	}
	if lim := f.ranges[unit]; v < lim[0] || v > lim[1] {
		if unit == "" {
			return nil, badReading("%s must be from %g to %g.", f.name, lim[0], lim[1])
		}
		return nil, badReading("%s must be from %g to %g %s.", f.name, lim[0], lim[1], unit)
	}
	switch {
	case f.name == "temperature_body":
		return strconv.FormatFloat(v, 'f', -1, 64), nil // a string, as the spec has it
	case f.kind == "integer":
		return int64(v), nil
	}
	return v, nil
}

func unitList(r map[string][2]float64) string {
	var us []string
	for u := range r {
		us = append(us, u)
	}
	if len(us) == 2 && us[0] > us[1] {
		us[0], us[1] = us[1], us[0]
	}
	return strings.Join(us, ", ")
}

// normNumber turns a json.Number into its text so one parser serves forms
// and JSON.
func normNumber(v any) any {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return v
}

func jsonFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// ReadingQuery is GET /users/{id}/health (extension).
type ReadingQuery struct {
	DataType string
	From, To int64
	// Before is the id of the last reading of the page before (0: from
	// the newest): the page goes on after it.
	Before int64
	Limit  int
}

// A page of Readings: DefaultReadings unless its Limit says, at most
// MaxReadings.
const (
	DefaultReadings = 100
	MaxReadings     = 1000
)

// readingsPage is how many readings a page asked for limit holds.
func readingsPage(limit int) int { return PageSize(limit, DefaultReadings, MaxReadings) }

// Readings is GET /users/{id}/health: a patient's readings, newest first.
func (a *App) Readings(ctx context.Context, p *clinic.Principal, userID int64, in ReadingQuery) (clinic.Page[*clinic.Reading], error) {
	if err := RequireUser(p); err != nil {
		return clinic.Page[*clinic.Reading]{}, err
	}
	out, err := a.readings(ctx, p, userID, in)
	return out, a.AuditOutcome(ctx, p, "health.read", "user", i64s(userID), err)
}

func (a *App) readings(ctx context.Context, p *clinic.Principal, userID int64, in ReadingQuery) (clinic.Page[*clinic.Reading], error) {
	var none clinic.Page[*clinic.Reading]
	u, err := a.recordOwner(ctx, p, userID, readRecords, false)
	if err != nil {
		return none, err
	}
	if _, ok := measures[in.DataType]; in.DataType != "" && !ok {
		return none, clinic.Errorf(clinic.EInvalid, "data_type %q is not a measurement type.", in.DataType)
	}
	size := readingsPage(in.Limit)
	f := store.ReadingFilter{DataType: in.DataType, From: in.From, To: in.To, Limit: size + 1}
	if in.Before < 0 {
		return none, clinic.Errorf(clinic.EInvalid, "before is the id of one of the patient's readings.")
	}
	if in.Before > 0 {
		b, err := a.store.Read().Reading(ctx, p.Account.ID, u.ID, in.Before)
		if errors.Is(err, store.ErrNotFound) {
			return none, clinic.Errorf(clinic.EInvalid, "before is the id of one of the patient's readings.")
		}
		if err != nil {
			return none, fmt.Errorf("health: %w", err)
		}
		f.Before = b
	}
	rs, err := a.store.Read().Readings(ctx, p.Account.ID, u.ID, f)
	if err != nil {
		return none, fmt.Errorf("health: %w", err)
	}
	return clinic.PageOf(rs, size, func(r *clinic.Reading) int64 { return r.ID }), nil
}
