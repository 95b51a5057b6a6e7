package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/live"
)

// pump is the API's side of an event stream (live.Pump): the caller's
// credentials are authenticated again before any event once a credential
// may have ended or their time is up, and at every keep-alive, and a
// stream whose right ended (signed out, revoked, expired, the visit no
// longer theirs) ends with an event "error" with the error's code and
// message as the API's error bodies give them.
func (s *Server) pump(r *http.Request, c *call) live.Pump {
	creds, need := c.creds, c.need
	return live.Pump{
		KeepAlive: s.cfg.KeepAlive,
		Closing:   s.cfg.Closing,
		// The credentials alone: a parked stream holds what its check
		// captures, and the request is a few KB.
		Check: func(ctx context.Context) (int64, error) { return s.stillIn(ctx, creds, need) },
		Epoch: s.app.CredentialEpoch,
		Now:   s.app.Unix,
		End:   streamEnd,
		Log:   s.log, Route: r.Pattern, RequestID: edge.RequestID(r.Context()),
		Parker: s.cfg.Parker,
	}
}

// streamEnd is the API's end event: "error", with the code and message.
func streamEnd(err error) live.Frame {
	return live.Frame{Name: "error", Data: mustJSON(streamError{Code: clinic.ErrorCode(err), Message: clinic.ErrorMessage(err)})}
}

type streamError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
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
