package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/jsonstr"
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
// fractional part, always present (spec: created has a fractional part). It
// is a json.Number, which encoding/json writes as it is: a MarshalJSON
// method was a third of the encoding of a thread page, spent re-scanning
// its output.
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
	var in app.MessageQuery
	var err error
	for _, f := range [...]struct {
		name string
		dst  **int
	}{{"limit", &in.Limit}, {"skip", &in.Skip}, {"page", &in.Page}} {
		if *f.dst, err = c.params.OptInt(f.name); err != nil {
			return err
		}
	}
	in.Sort, in.Order = c.params.Str("sort"), c.params.Str("order")
	ms, total, err := s.app.ListMessages(r.Context(), c.p, c.params.Str("visit_id"), in)
	if err != nil {
		return err
	}
	// The page is built in a buffer kept from an earlier page: a new one
	// was zeroed on every request. Buffers of pages far over the usual
	// size are let go.
	bp, _ := s.pages.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	*bp, err = writeMessagePage(w, (*bp)[:0], ms, total)
	if cap(*bp) <= 64<<10 {
		s.pages.Put(bp)
	}
	return err
}

// writeMessagePage answers a thread page with the bytes okList would write
// for it (TestMessagePage_SameBytes holds it to that), appended by hand: a
// page is the most requested answer there is, and encoding/json's
// reflection over 25 messages and their envelope was 7% of the server's
// CPU in a thread read, with 55 allocations a page (pprof, benchmarks).
//
// It builds the page in b and returns it, grown.
func writeMessagePage(w http.ResponseWriter, b []byte, ms []*app.Message, total int) ([]byte, error) {
	b = slices.Grow(b, 64+256*len(ms))
	b = append(b, `{"data":[`...)
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, m)
	}
	b = append(b, `],"total_count":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, "}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	// A page is larger than net/http's buffer: with its length given, it
	// goes out as it is, not in chunks.
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return b, err
}

// appendMessage appends m as encoding/json writes toMessageOut(m).
func appendMessage(b []byte, m *app.Message) []byte {
	b = append(b, `{"id":"`...)
	b = strconv.AppendInt(b, m.ID, 10)
	b = append(b, `","visit_id":"`...)
	b = strconv.AppendInt(b, m.VisitID, 10)
	b = append(b, `","type":`...)
	b = jsonstr.Append(b, m.Type)
	b = append(b, `,"actor":{"id":"`...)
	b = strconv.AppendInt(b, m.Actor.ID, 10)
	b = append(b, `","type":`...)
	b = strconv.AppendInt(b, int64(m.Actor.Type), 10)
	b = append(b, `,"display_name":`...)
	b = jsonstr.Append(b, m.Actor.DisplayName)
	b = append(b, `},"content":`...)
	b = jsonstr.Append(b, m.Content)
	b = append(b, `,"attachment_ids":[`...)
	for i, a := range m.Attachments {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, a, 10)
		b = append(b, '"')
	}
	b = append(b, `],"created":`...)
	b = appendUnixMicros(b, m.CreatedUS)
	return append(b, '}')
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, c *call) error {
	in := app.NewMessage{AttachmentIDs: c.params.List("attachment_ids")}
	if v, ok := c.params.StrOK("content"); ok {
		in.Content = &v
	}
	m, err := s.app.PostMessage(r.Context(), c.p, c.params.Str("visit_id"), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, envelope{Data: toMessageOut(m)})
}
