package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
)

// accountSettingsOut is GET/POST /account/settings. webhook_secret appears
// only in the answer that set or generated it.
type accountSettingsOut struct {
	AccountCode      string `json:"account_code"`
	WebhookURL       string `json:"webhook_url"`
	WebhookSecretSet bool   `json:"webhook_secret_set"`
	WebhookSecret    string `json:"webhook_secret,omitempty"`
}

func toAccountSettings(w *app.WebhookSettings) accountSettingsOut {
	return accountSettingsOut{AccountCode: w.AccountCode, WebhookURL: w.URL, WebhookSecretSet: w.SecretSet, WebhookSecret: w.Secret}
}

func (s *Server) getAccountSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	ws, err := s.app.WebhookSettings(r.Context(), c.p)
	if err != nil {
		return err
	}
	return ok(w, toAccountSettings(ws))
}

func (s *Server) setAccountSettings(w http.ResponseWriter, r *http.Request, c *call) error {
	gen, err := c.params.Flag("generate_webhook_secret")
	if err != nil {
		return err
	}
	ws, err := s.app.SetWebhookSettings(r.Context(), c.p, app.WebhookSettingsInput{
		URL: c.params.Opt("webhook_url"), Secret: c.params.Opt("webhook_secret"), GenerateSecret: gen})
	if err != nil {
		return err
	}
	return ok(w, toAccountSettings(ws))
}

// deliveryOut is one webhook delivery.
type deliveryOut struct {
	ID             string  `json:"id"`
	Event          string  `json:"event"`
	VisitID        string  `json:"visit_id"`
	MessageID      string  `json:"message_id"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttempt    *int64  `json:"next_attempt"`
	Outcome        string  `json:"outcome"`
	Created        int64   `json:"created"`
	Finished       *int64  `json:"finished"`
}

func toDelivery(d *app.WebhookDelivery) deliveryOut {
	out := deliveryOut{ID: id(d.ID), Event: d.Event, VisitID: d.VisitID, MessageID: d.MessageID, Attempts: d.Attempts, Outcome: d.Outcome, Created: d.Created}
	if d.LastStatus != 0 {
		out.LastStatusCode = &d.LastStatus
	}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	if d.NextAttempt != 0 {
		out.NextAttempt = &d.NextAttempt
	}
	if d.Finished != 0 {
		out.Finished = &d.Finished
	}
	return out
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, c *call) error {
	before, limit, err := c.params.Keyset("before")
	if err != nil {
		return err
	}
	ds, err := s.app.WebhookDeliveries(r.Context(), c.p, before, limit)
	if err != nil {
		return err
	}
	nextLink(w, r, "before", ds.Next)
	out := make([]deliveryOut, len(ds.Items))
	for i, d := range ds.Items {
		out[i] = toDelivery(d)
	}
	return ok(w, out)
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, c *call) error {
	deliveryID, err := pathID(c, "id", "Delivery")
	if err != nil {
		return err
	}
	d, err := s.app.Redeliver(r.Context(), c.p, deliveryID)
	if err != nil {
		return err
	}
	return ok(w, toDelivery(d))
}
