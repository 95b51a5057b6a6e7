package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// endpointOut is the spec's push endpoint. arn names a push registration,
// as the original's push service did; email endpoints have none.
type endpointOut struct {
	ID       string  `json:"id"`
	Key      string  `json:"key"`
	UserID   string  `json:"user_id"`
	Type     int     `json:"type"`
	Created  int64   `json:"created"`
	Modified int64   `json:"modified"`
	ARN      *string `json:"arn,omitempty"`
}

func toEndpoint(e *clinic.Endpoint) endpointOut {
	out := endpointOut{ID: id(e.ID), Key: e.Address, UserID: id(e.UserID), Type: e.Type, Created: e.Created, Modified: e.Modified}
	switch e.Type {
	case app.EndpointAPNs:
		arn := "teleclinic:push:apns:endpoint/" + id(e.ID)
		out.ARN = &arn
	case app.EndpointFCM:
		arn := "teleclinic:push:fcm:endpoint/" + id(e.ID)
		out.ARN = &arn
	}
	return out
}

func (s *Server) createEndpoint(w http.ResponseWriter, r *http.Request, c *call) error {
	e, err := s.app.RegisterEndpoint(r.Context(), c.p, c.params.Str("key"), c.params.Str("type"))
	if err != nil {
		return err
	}
	return ok(w, toEndpoint(e))
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request, c *call) error {
	es, err := s.app.Endpoints(r.Context(), c.p, c.params.Str("type"))
	if err != nil {
		return err
	}
	out := make([]endpointOut, len(es))
	for i, e := range es {
		out[i] = toEndpoint(e)
	}
	return ok(w, out)
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request, c *call) error {
	endpointID, err := pathID(c, "id", "Endpoint")
	if err != nil {
		return err
	}
	e, err := s.app.Endpoint(r.Context(), c.p, endpointID)
	if err != nil {
		return err
	}
	return ok(w, toEndpoint(e))
}

type deletedID struct {
	ID string `json:"id"`
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request, c *call) error {
	endpointID, err := pathID(c, "id", "Endpoint")
	if err != nil {
		return err
	}
	n, err := s.app.DeleteEndpoint(r.Context(), c.p, endpointID)
	if err != nil {
		return err
	}
	return ok(w, deletedID{ID: id(n)})
}

// notificationOut is the spec's notification; visit_id (extension) says
// which visit it is about.
type notificationOut struct {
	ID      string `json:"id"`
	UserID  string `json:"user_id"`
	Type    string `json:"type"`
	Time    int64  `json:"time"`
	Mtime   int64  `json:"mtime"`
	IsNew   bool   `json:"is_new"`
	Read    bool   `json:"read"`
	Title   string `json:"title"`
	Image   string `json:"image"`
	VisitID string `json:"visit_id,omitempty"`
}

func toNotification(n *clinic.Notification) notificationOut {
	out := notificationOut{ID: id(n.ID), UserID: id(n.UserID), Type: n.Type, Time: n.Created, Mtime: n.MtimeMS, IsNew: n.IsNew, Read: n.Read, Title: n.Title, Image: n.Image}
	if n.VisitID != 0 {
		out.VisitID = id(n.VisitID)
	}
	return out
}

func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request, c *call) error {
	size, err := c.params.OptInt("size")
	if err != nil {
		return err
	}
	last, err := c.params.Int("last", 0)
	if err != nil {
		return clinic.Errorf(clinic.EInvalid, "last must be a timestamp in milliseconds.")
	}
	before, err := c.params.Int("before", 0)
	if err != nil {
		return err
	}
	ns, err := s.app.Notifications(r.Context(), c.p, size, last, before)
	if err != nil {
		return err
	}
	nextLink(w, r, "before", ns.Next, "last")
	out := make([]notificationOut, len(ns.Items))
	for i, n := range ns.Items {
		out[i] = toNotification(n)
	}
	return ok(w, out)
}

func (s *Server) readNotification(w http.ResponseWriter, r *http.Request, c *call) error {
	notificationID, err := pathID(c, "id", "Notification")
	if err != nil {
		return err
	}
	n, err := s.app.ReadNotification(r.Context(), c.p, notificationID)
	if err != nil {
		return err
	}
	return ok(w, toNotification(n))
}

func (s *Server) badge(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := s.app.Badge(r.Context(), c.p)
	if err != nil {
		return err
	}
	return ok(w, n)
}

func (s *Server) resetBadge(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.ResetBadge(r.Context(), c.p); err != nil {
		return err
	}
	return ok(w, true)
}
