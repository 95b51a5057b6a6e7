package httpapi

import (
	"errors"
	"io"
	"net/http"

	"teleclinic/internal/clinic"
)

// liveKitWebhook is POST /api_v3/livekit/webhook: LiveKit's report of what
// happened in a visit's room (app.LiveKitWebhook). The body is read whole,
// up to the body limit: LiveKit's signature covers its bytes.
func (s *Server) liveKitWebhook(w http.ResponseWriter, r *http.Request, c *call) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return clinic.Errorf(clinic.ETooLarge, "The webhook's body is larger than the server takes.")
		}
		return clinic.Errorf(clinic.EInvalid, "The webhook's body could not be read.")
	}
	if err := s.calls.LiveKitWebhook(r.Context(), r.Header.Get("Authorization"), body, c.p.RequestID); err != nil {
		return err
	}
	return ok(w, true)
}
