package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
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
	return writeDeliveries(w, r, ds)
}

// writeDeliveries answers a page of deliveries, with the link to the next.
func writeDeliveries(w http.ResponseWriter, r *http.Request, ds clinic.Page[*app.WebhookDelivery]) error {
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

// eventTypeOut is an event type of the catalog.
type eventTypeOut struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// listEventTypes is GET /webhooks/events: the event types an endpoint
// subscribes to.
func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request, c *call) error {
	out := make([]eventTypeOut, len(app.Events))
	for i, e := range app.Events {
		out[i] = eventTypeOut{Type: e.Type, Description: e.Description}
	}
	return ok(w, out)
}

// hookEndpointOut is a webhook endpoint; secret only in the answer that made
// it.
type hookEndpointOut struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Secret  string   `json:"secret,omitempty"`
	Created int64    `json:"created"`
}

func toHookEndpoint(e *app.WebhookEndpoint) hookEndpointOut {
	return hookEndpointOut{ID: id(e.ID), URL: e.URL, Events: e.Events, Secret: e.Secret, Created: e.Created}
}

func (s *Server) listHookEndpoints(w http.ResponseWriter, r *http.Request, c *call) error {
	es, err := s.app.WebhookEndpoints(r.Context(), c.p)
	if err != nil {
		return err
	}
	out := make([]hookEndpointOut, len(es))
	for i, e := range es {
		out[i] = toHookEndpoint(e)
	}
	return ok(w, out)
}

// createHookEndpoint is POST /webhooks/endpoints: url and events (a JSON list,
// or events[] in a form).
func (s *Server) createHookEndpoint(w http.ResponseWriter, r *http.Request, c *call) error {
	in := app.EndpointInput{URL: c.params.Str("url")}
	if _, err := c.params.JSON("events", &in.Events); err != nil {
		in.Events = c.params.List("events")
	}
	e, err := s.app.CreateWebhookEndpoint(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	return edge.WriteJSON(w, http.StatusCreated, envelope{Data: toHookEndpoint(e)})
}

func (s *Server) deleteHookEndpoint(w http.ResponseWriter, r *http.Request, c *call) error {
	eid, err := pathID(c, "id", "Webhook endpoint")
	if err != nil {
		return err
	}
	if err := s.app.DeleteWebhookEndpoint(r.Context(), c.p, eid); err != nil {
		return err
	}
	return ok(w, true)
}

func (s *Server) listEndpointDeliveries(w http.ResponseWriter, r *http.Request, c *call) error {
	eid, err := pathID(c, "id", "Webhook endpoint")
	if err != nil {
		return err
	}
	before, limit, err := c.params.Keyset("before")
	if err != nil {
		return err
	}
	ds, err := s.app.EndpointDeliveries(r.Context(), c.p, eid, before, limit)
	if err != nil {
		return err
	}
	return writeDeliveries(w, r, ds)
}
