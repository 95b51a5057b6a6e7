package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"sync"

	"teleclinic/internal/app"
	"teleclinic/internal/jsonstr"
)

// messagePages writes thread pages (GET /api/visits/{id}/messages) with
// the bytes okList writes for them (TestMessages_PageSameBytes holds it to
// that), appended by hand into buffers kept from earlier pages. A page is
// the most requested answer there is, and the messages-read target (50% of
// the point read) needs it: with encoding/json the load tool measured
// messages-read at 39 / 44 / 52% of the point read at 8 / 64 / 256
// connections, with this writer 52 / 58 / 56%, in the same hour
// (docs/design-notes.md). Every other answer is encoded by encoding/json.
type messagePages struct {
	bufs sync.Pool // *[]byte
}

// write answers ms, a page of a thread of total messages.
func (mp *messagePages) write(w http.ResponseWriter, ms []*app.Message, total int) error {
	bp, _ := mp.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := slices.Grow((*bp)[:0], 64+256*len(ms))
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
	// Buffers of pages far over the usual size are let go.
	if cap(b) <= 64<<10 {
		*bp = b
		mp.bufs.Put(bp)
	}
	return err
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
