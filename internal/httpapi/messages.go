package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/live"
)

// messageOut is the spec's Visit message.
type messageOut struct {
	ID            string      `json:"id"`
	VisitID       string      `json:"visit_id"`
	Type          string      `json:"type"`
	Actor         actorOut    `json:"actor"`
	Content       string      `json:"content"`
	AttachmentIDs []string    `json:"attachment_ids"`
	Created       json.Number `json:"created"`
}

type actorOut struct {
	ID          string `json:"id"`
	Type        int    `json:"type"`
	DisplayName string `json:"display_name"`
}

// unixMicros writes a time in microseconds as UNIX seconds with a six-digit
// fractional part, always present (spec: created has a fractional part),
// as a json.Number, which encoding/json writes as it is.
func unixMicros(us int64) json.Number {
	return json.Number(appendUnixMicros(make([]byte, 0, 24), us))
}

func appendUnixMicros(b []byte, us int64) []byte {
	b = strconv.AppendInt(b, us/1e6, 10)
	b = append(b, '.')
	n := len(b)
	b = strconv.AppendInt(b, 1e6+us%1e6, 10) // 1xxxxxx keeps the leading zeros
	return append(b[:n], b[n+1:]...)
}

func toMessageOut(m *app.Message) messageOut {
	att := make([]string, len(m.Attachments))
	for i, a := range m.Attachments {
		att[i] = id(a)
	}
	return messageOut{ID: id(m.ID), VisitID: id(m.VisitID), Type: m.Type, Content: m.Content, AttachmentIDs: att, Created: unixMicros(m.CreatedUS),
		Actor: actorOut{ID: id(m.Actor.ID), Type: m.Actor.Type, DisplayName: m.Actor.DisplayName}}
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, c *call) error {
	visitID, err := pathID(c, "visit_id", "Visit")
	if err != nil {
		return err
	}
	var in app.MessageQuery
	for _, f := range [...]struct {
		name string
		dst  **int
	}{{"limit", &in.Limit}, {"skip", &in.Skip}, {"page", &in.Page}} {
		if *f.dst, err = c.params.OptInt(f.name); err != nil {
			return err
		}
	}
	in.Sort, in.Order = c.params.Str("sort"), c.params.Str("order")
	ms, total, err := s.app.ListMessages(r.Context(), c.p, visitID, in)
	if err != nil {
		return err
	}
	return s.pages.write(w, ms, total)
}

// messageEvents streams a visit's thread: an event "message" for each
// message after the Last-Event-ID the client has (its place in the thread,
// which is the event's id), as GET /api/visits/{id}/messages shows it, and
// an event "visit" when the visit changes state.
func (s *Server) messageEvents(w http.ResponseWriter, r *http.Request, c *call) error {
	visitID, err := pathID(c, "visit_id", "Visit")
	if err != nil {
		return err
	}
	release, err := s.cfg.Streams.Open(live.CredentialKey(c.p), edge.ClientAddr(r))
	if err != nil {
		return err
	}
	watch, err := s.app.WatchVisit(r.Context(), c.p, visitID, live.LastEventID(r))
	if err != nil {
		release()
		return err
	}
	src := live.Polled{Subs: []*live.Sub{watch.Sub()}, Ahead: watch.Ahead, Poll: func(ctx context.Context, ch live.Changes) ([]live.Frame, error) {
		ev, ok, err := watch.Poll(ctx, ch)
		if !ok || err != nil {
			return nil, err
		}
		var out []live.Frame
		if ev.Visit != nil {
			out = append(out, live.Frame{Name: "visit", Data: mustJSON(visitEvent{ID: id(ev.Visit.ID), Status: ev.Visit.Status})})
		}
		for i, m := range ev.Messages {
			out = append(out, live.Frame{Name: "message", ID: strconv.Itoa(ev.First + i), Data: mustJSON(toMessageOut(m))})
		}
		return out, nil
	}}
	pump := s.pump(r, c)
	pump.Tick = watch.Tick // a waiting patient's stream keeps them in the queue (app/presence.go)
	pump.Serve(w, r, src, func() { watch.Close(); release() })
	return nil
}

// visitEvent is the data of a "visit" event: the visit's new status.
type visitEvent struct {
	ID     string `json:"id"`
	Status int    `json:"status"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, c *call) error {
	att, err := idList(c.params.List("attachment_ids"), func(v string) error {
		return clinic.Errorf(clinic.EInvalid, "attachment_ids must be file ids from POST /files; %q is not one.", v)
	})
	if err != nil {
		return err
	}
	in := app.NewMessage{AttachmentIDs: att}
	if v, ok := c.params.StrOK("content"); ok {
		in.Content = &v
	}
	visitID, err := pathID(c, "visit_id", "Visit")
	if err != nil {
		return err
	}
	m, err := s.app.PostMessage(r.Context(), c.p, visitID, in)
	if err != nil {
		return err
	}
	return edge.WriteJSON(w, http.StatusCreated, envelope{Data: toMessageOut(m)})
}
