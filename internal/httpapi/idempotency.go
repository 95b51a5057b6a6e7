package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"

	"teleclinic/internal/edge"
)

// Idempotency-Key (app.BeginIdempotent): a POST, PUT or DELETE that names
// a key runs once; a retry replays its answer with Idempotent-Replayed.

// maxReplayBody is the largest answer kept for replay; a larger one (no
// write of the API answers that much) is not kept, and a retry runs again.
const maxReplayBody = 1 << 20

// runOnce is run for a request that may carry an Idempotency-Key.
func (s *Server) runOnce(w http.ResponseWriter, r *http.Request, rt Route, c *call) error {
	key := r.Header.Get("Idempotency-Key")
	if key == "" || (r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodDelete) {
		return s.run(w, r, rt, c)
	}
	claim, replay, err := s.app.BeginIdempotent(r.Context(), c.p, key, fingerprint(r, c.params))
	if err != nil {
		return err
	}
	if claim == nil && replay == nil { // the key is not kept for this caller
		return s.run(w, r, rt, c)
	}
	if replay != nil {
		if replay.ContentType != "" {
			w.Header().Set("Content-Type", replay.ContentType)
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(replay.Status)
		_, _ = w.Write(replay.Body)
		return nil
	}
	tw := &teeWriter{ResponseWriter: w}
	if err := s.run(tw, r, rt, c); err != nil {
		s.fail(tw, r, rt.fam, err) // the refusal is the answer a retry gets too
	}
	status, body := tw.status, tw.body.Bytes()
	if tw.status == 0 || tw.over {
		status, body = http.StatusInternalServerError, nil // nothing to replay
	}
	if err := s.app.FinishIdempotent(r.Context(), claim, status, tw.Header().Get("Content-Type"), body); err != nil {
		s.log.ErrorContext(r.Context(), "idempotency key: storing the answer", "request_id", edge.RequestID(r.Context()), "err", err)
	}
	return nil
}

// fingerprint hashes what makes two requests the same request: method,
// path and the parameters by name (not their encoding: a retry may send
// the same form with another multipart boundary), files by content.
func fingerprint(r *http.Request, p *Params) string {
	h := sha256.New()
	io.WriteString(h, r.Method+" "+r.URL.Path+"\n")
	writeValues := func(m map[string][]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			for _, v := range m[k] {
				io.WriteString(h, strconv.Quote(k)+"="+strconv.Quote(v)+"\n")
			}
		}
	}
	writeValues(p.query)
	writeValues(p.body)
	if p.json != nil {
		b, _ := json.Marshal(p.json) // map keys come out sorted
		h.Write(b)
	}
	names := make([]string, 0, len(p.Files))
	for k := range p.Files {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, u := range p.Files[k] {
			io.WriteString(h, "\nfile "+strconv.Quote(k)+" "+strconv.Quote(u.Filename)+" ")
			f, err := u.Open()
			if err == nil {
				io.Copy(h, f)
				f.Close()
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// teeWriter passes an answer through and keeps a copy of it.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	over   bool
}

func (t *teeWriter) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if !t.over {
		if t.body.Len()+len(b) > maxReplayBody {
			t.over = true
			t.body.Reset()
		} else {
			t.body.Write(b)
		}
	}
	return t.ResponseWriter.Write(b)
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
