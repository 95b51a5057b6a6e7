package httpapi

import (
	"context"
	"encoding/json"

	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
)

// streamEnd ends an event stream that err stopped. A client that went
// away hears nothing; one whose right ended (signed out, the visit no
// longer theirs) gets an event "error" with the error's code and message
// as the API's error bodies give them, and does not reconnect to it.
func (s *Server) streamEnd(ctx context.Context, st *live.Stream, err error) {
	if ctx.Err() != nil {
		return
	}
	code, msg := clinic.ErrorCode(err), clinic.ErrorMessage(err)
	if code == clinic.EInternal {
		s.log.Error("event stream", "err", err)
		msg = "Internal error."
	}
	_ = st.Event("error", "", mustJSON(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, msg}))
}

// mustJSON encodes a value of one of the response types, which always
// encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
