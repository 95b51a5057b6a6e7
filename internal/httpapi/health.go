package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// deviceOut is the spec's Device.
type deviceOut struct {
	DeviceID   string `json:"device_id"`
	DeviceName string `json:"device_name"`
	Type       string `json:"type"`
	UserID     string `json:"user_id"`
	CreatedAt  int64  `json:"created_at"`
}

func toDevice(d *clinic.Device) deviceOut {
	return deviceOut{DeviceID: d.DeviceID, DeviceName: d.Name, Type: d.Type, UserID: id(d.UserID), CreatedAt: d.Created}
}

func (s *Server) registerDevice(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	d, err := s.app.RegisterDevice(r.Context(), c.p, userID, q.Str("device_id"), q.Str("device_name"), q.Str("type"))
	if err != nil {
		return err
	}
	return ok(w, toDevice(d))
}

func (s *Server) listDevices(w http.ResponseWriter, r *http.Request, c *call) error {
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	ds, err := s.app.Devices(r.Context(), c.p, userID)
	if err != nil {
		return err
	}
	out := make([]deviceOut, len(ds))
	for i, d := range ds {
		out[i] = toDevice(d)
	}
	return ok(w, out)
}

type readingSaved struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (s *Server) addReading(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.HealthInput{Type: q.Str("type"), Date: q.Str("date"), DeviceID: q.Str("device_id"), DataType: q.Str("data_type"),
		DataClass: q.Str("data_class"), Values: map[string]any{}}
	in.Time, _ = q.Raw("time")
	for _, name := range app.MeasurementFieldNames() {
		if v, ok := q.Raw(name); ok {
			in.Values[name] = v
		}
	}
	rd, err := s.app.AddReading(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	return ok(w, readingSaved{ID: id(rd.ID), Status: "saved"})
}

// readingOut is a stored measurement: the POST /health fields with the
// values of its data_type.
type readingOut map[string]any

func (s *Server) listReadings(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	from, err := q.Int("from", 0)
	if err != nil {
		return err
	}
	to, err := q.Int("to", 0)
	if err != nil {
		return err
	}
	before, limit, err := q.Keyset("before")
	if err != nil {
		return err
	}
	userID, err := userIDParam(c, "user_id")
	if err != nil {
		return err
	}
	rs, err := s.app.Readings(r.Context(), c.p, userID, app.ReadingQuery{DataType: q.Str("data_type"), From: from, To: to, Before: before, Limit: limit})
	if err != nil {
		return err
	}
	nextLink(w, r, "before", rs.Next)
	out := make([]readingOut, len(rs.Items))
	for i, rd := range rs.Items {
		o := readingOut{"id": id(rd.ID), "user_id": id(rd.UserID), "device_id": rd.DeviceID, "type": rd.Type, "data_type": rd.DataType,
			"data_class": rd.DataClass, "date": rd.Date, "time": rd.Time, "created": rd.Created}
		for k, v := range rd.Values {
			o[k] = v
		}
		out[i] = o
	}
	return ok(w, out)
}
