package httpapi

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
)

// recordingOut is the spec's Recording; `path` only in the single fetch.
type recordingOut struct {
	ID           int64                `json:"id"`
	VisitID      string               `json:"visit_id"`
	Start        int64                `json:"start"`
	End          int64                `json:"end"`
	Version      int                  `json:"version"`
	Participants []clinic.Participant `json:"participants"`
	Size         int64                `json:"size"`
	ContentType  string               `json:"content_type"`
	Path         *recordingPath       `json:"path,omitempty"`
}

type recordingPath struct {
	URL    string `json:"url"`
	Expiry int64  `json:"expiry"`
}

type recordings struct {
	Count int            `json:"count"`
	Data  []recordingOut `json:"data"`
}

func toRecording(r clinic.Recording) recordingOut {
	parts := r.Participants
	if parts == nil {
		parts = []clinic.Participant{}
	}
	return recordingOut{ID: r.ID, VisitID: id(r.VisitID), Start: r.Start, End: r.End, Version: r.Version, Participants: parts,
		Size: r.Size, ContentType: r.ContentType}
}

// wantsRecordings reads fields=…recordings… of the visit reads.
func wantsRecordings(c *call) bool {
	for _, f := range c.params.List("fields") {
		if f == "recordings" {
			return true
		}
	}
	return false
}

func (s *Server) addRecording(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	q := c.params
	in := app.RecordingInput{}
	if in.Start, err = q.Int("start", 0); err != nil {
		return err
	}
	if in.End, err = q.Int("end", 0); err != nil {
		return err
	}
	if _, err := q.JSON("participants", &in.Participants); err != nil {
		return err
	}
	f, _, err := uploadedFile(c, "file")
	if err != nil {
		return err
	}
	if f != nil {
		defer f.Close()
		in.File = f
	}
	rec, err := s.app.AddRecording(r.Context(), c.p, vid, in)
	if err != nil {
		return err
	}
	return ok(w, toRecording(*rec))
}

// getRecording answers the recording itself, not wrapped in data (spec).
func (s *Server) getRecording(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	rid, err := pathID(c, "recording_id", "Recording")
	if err != nil {
		return err
	}
	link, err := s.app.GetRecording(r.Context(), c.p, vid, rid)
	if err != nil {
		return err
	}
	out := toRecording(*link.Recording)
	out.Path = &recordingPath{URL: link.URL, Expiry: link.Expiry}
	w.Header().Set("Cache-Control", "no-store")
	return edge.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) downloadRecording(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	rid, err := strconv.ParseInt(q.Str("id"), 10, 64)
	if err != nil {
		return clinic.Errorf(clinic.EForbidden, "This download link is not valid.")
	}
	exp, err := q.Int("expires", 0)
	if err != nil {
		return clinic.Errorf(clinic.EForbidden, "This download link is not valid.")
	}
	dl, err := s.app.OpenRecording(r.Context(), c.p.RequestID, q.Str("account"), rid, exp, q.Str("signature"))
	if err != nil {
		return err
	}
	defer dl.Body.Close()
	h := w.Header()
	h.Set("Content-Type", dl.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", `attachment; filename="`+dl.Name+`"`)
	h.Set("Cache-Control", "private, no-store")
	if rs, ok := dl.Body.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", timeZero, rs) // answers Range requests
		return nil
	}
	h.Set("Content-Length", strconv.FormatInt(dl.Size, 10))
	_, err = io.Copy(w, dl.Body)
	return err
}

// timeZero leaves Last-Modified out of downloads.
var timeZero time.Time
