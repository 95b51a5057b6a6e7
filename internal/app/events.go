package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/webhook"
)

// Every lifecycle event as a webhook. Beside the spec's one webhook
// (accounts.webhook_url, which announces visit.message.created as it
// always did, from the message's one-statement post), a clinic registers
// endpoints, each subscribed to the lifecycle event types it wants
// (Events). An event is written to the outbox in the
// transaction of the change it announces, one item per subscribed
// endpoint: a change that did not commit announces nothing, one that did
// is announced once to each (the outbox's claim), signed with the
// endpoint's secret by the Standard Webhooks scheme, with the spec's
// retries, and listed per endpoint for the admin, who may send one again.

// TopicEvent is the outbox topic of an event's delivery to an endpoint.
const TopicEvent = "event"

// The event types (the catalog; openapi.yaml's x-webhooks documents each).
const (
	EventVisitCreated          = "visit.created"
	EventVisitWaiting          = "visit.waiting"
	EventVisitStarted          = "visit.started"
	EventVisitEnded            = "visit.ended"
	EventVisitCancelled        = "visit.cancelled"
	EventAppointmentBooked     = "appointment.booked"
	EventAppointmentMoved      = "appointment.rescheduled"
	EventAppointmentCancelled  = "appointment.cancelled"
	EventAppointmentNoShow     = "appointment.no_show"
	EventAppointmentLate       = "appointment.late_cancelled"
	EventNoteSigned            = "note.signed"
	EventPaymentSucceeded      = "payment.succeeded"
	EventPaymentRefunded       = "payment.refunded"
	EventRecordingReady        = "recording.ready"
	EventIntakeSubmitted       = "intake.submitted"
	EventUserCreated           = "user.created"
	maxEndpointsPerClinic      = 20
	webhookEndpointNotFoundMsg = "Webhook endpoint not found."
)

// Events are the event types an endpoint may subscribe to, with what
// each announces.
var Events = []EventType{
	{EventVisitCreated, "A visit was created: a walk-in, an e-consult or a booked appointment."},
	{EventVisitWaiting, "A walk-in joined its room's waiting room."},
	{EventVisitStarted, "A visit started: in progress (its provider joined the call, or started it)."},
	{EventVisitEnded, "A visit ended: completed."},
	{EventVisitCancelled, "A visit was cancelled (reason given; no-show for a patient who did not come)."},
	{EventAppointmentBooked, "An appointment was booked at a time."},
	{EventAppointmentMoved, "An appointment moved to another time."},
	{EventAppointmentCancelled, "An appointment was cancelled."},
	{EventAppointmentNoShow, "An appointment's patient did not come (cancelled as a no-show, outcome no_show): marked by staff, or by the room's no_show_minutes."},
	{EventAppointmentLate, "An appointment was cancelled inside its room's cancel_hours window (outcome late_cancel)."},
	{EventNoteSigned, "A visit's note was signed: its diagnoses and service are the visit's billing codes."},
	{EventPaymentSucceeded, "A payment was charged."},
	{EventPaymentRefunded, "A payment was refunded, in whole or in part."},
	{EventRecordingReady, "A recording of a visit's call was saved."},
	{EventIntakeSubmitted, "A patient submitted an intake."},
	{EventUserCreated, "A user was created (by single sign-on, sign-up or invitation)."},
}

// EventType is an event of the catalog.
type EventType struct{ Type, Description string }

func knownEvent(t string) bool {
	return slices.ContainsFunc(Events, func(e EventType) bool { return e.Type == t })
}

// Emit writes event typ with data to the outbox of each of the clinic's
// endpoints subscribed to it, in q's transaction (the change's own).
func (a *App) Emit(ctx context.Context, q *store.Q, accountID int64, typ string, data any) error {
	eps, err := q.WebhookEndpoints(ctx, accountID)
	if err != nil || len(eps) == 0 {
		return err
	}
	body, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	payload, _ := json.Marshal(eventItem{Type: typ, Data: body})
	now := a.Unix()
	queued := false
	for _, e := range eps {
		if !slices.Contains(e.Events, typ) {
			continue
		}
		if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: accountID, Topic: TopicEvent, Payload: string(payload), Created: now, Due: now, EndpointID: e.ID}); err != nil {
			return err
		}
		queued = true
	}
	if queued {
		q.AfterCommit(a.kickWebhooks)
	}
	return nil
}

// eventItem is an event's outbox payload: its type and data.
type eventItem struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// VisitHook is the data of a visit's webhook events: what an integrator needs to
// find the visit and act, no clinical text.
type VisitHook struct {
	VisitID    string `json:"visit_id"`
	Kind       string `json:"kind"`
	Status     int    `json:"status"`
	PatientID  string `json:"patient_id"`
	ProviderID string `json:"provider_id,omitempty"`
	RoomID     string `json:"room_id,omitempty"`
	Start      int64  `json:"start,omitempty"`
	End        int64  `json:"end,omitempty"`
	Reason     string `json:"reason,omitempty"`  // a cancellation's
	Outcome    string `json:"outcome,omitempty"` // a cancellation's: no_show, late_cancel
}

// visitEvent is v's event data, in the state it reached (status).
func visitEvent(v *clinic.Visit, status int, reason string) VisitHook {
	e := VisitHook{VisitID: i64s(v.ID), Kind: v.Kind, Status: status, PatientID: i64s(v.MemberID), Start: v.Start, End: v.End, Reason: reason, Outcome: v.Outcome}
	if v.ProviderID != 0 {
		e.ProviderID = i64s(v.ProviderID)
	}
	if v.RoomID != 0 {
		e.RoomID = i64s(v.RoomID)
	}
	return e
}

// emitVisit emits typ for visit v in the state it reached.
func (a *App) emitVisit(ctx context.Context, q *store.Q, typ string, v *clinic.Visit, status int, reason string) error {
	return a.Emit(ctx, q, v.AccountID, typ, visitEvent(v, status, reason))
}

// WebhookEndpoint is an endpoint as the admin sees it: the secret only in
// the answer that made it.
type WebhookEndpoint struct {
	ID      int64
	URL     string
	Events  []string
	Secret  string
	Created int64
}

// EndpointInput is POST /webhooks/endpoints.
type EndpointInput struct {
	URL    string
	Events []string
}

// CreateWebhookEndpoint is POST /webhooks/endpoints (admin): an endpoint
// for the event types listed, with a new signing secret shown once.
func (a *App) CreateWebhookEndpoint(ctx context.Context, p *clinic.Principal, in EndpointInput) (*WebhookEndpoint, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	url := strings.TrimSpace(in.URL)
	if err := CheckFields(Line("url", url, 2048)); err != nil {
		return nil, err
	}
	if url == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "url (where the events go) is required.")
	}
	if err := webhook.CheckURL(url, a.cfg.Webhooks.AllowPrivate); err != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "%s", err.Error())
	}
	var events []string
	for _, t := range in.Events {
		t = strings.TrimSpace(t)
		if t == EventMessageCreated {
			return nil, clinic.Errorf(clinic.EInvalid, "events: %s goes to the clinic's webhook (POST /account/settings webhook_url), as the spec defines it.", t)
		}
		if !knownEvent(t) {
			return nil, clinic.Errorf(clinic.EInvalid, "events: %q is not an event type (GET /webhooks/events lists them).", t)
		}
		if !slices.Contains(events, t) {
			events = append(events, t)
		}
	}
	if len(events) == 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "events (the event types the endpoint receives) is required.")
	}
	shown := webhook.NewSecret()
	key, _ := webhook.ParseSecret(shown)
	sealed, err := a.Seal(key)
	if err != nil {
		return nil, err
	}
	now := a.Unix()
	e := &store.WebhookEndpoint{AccountID: p.Account.ID, URL: url, SealedSecret: sealed, Events: events, Created: now, Modified: now}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		have, err := q.WebhookEndpoints(ctx, p.Account.ID)
		if err != nil {
			return err
		}
		if len(have) >= maxEndpointsPerClinic {
			return clinic.Errorf(clinic.EConflict, "A clinic has at most %d webhook endpoints; remove one first.", maxEndpointsPerClinic)
		}
		if err := q.CreateWebhookEndpoint(ctx, e); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "webhook.endpoint.create", "webhook_endpoint", i64s(e.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("webhook endpoint", err, "")
	}
	return &WebhookEndpoint{ID: e.ID, URL: e.URL, Events: e.Events, Secret: shown, Created: e.Created}, nil
}

// WebhookEndpoints is GET /webhooks/endpoints (admin).
func (a *App) WebhookEndpoints(ctx context.Context, p *clinic.Principal) ([]*WebhookEndpoint, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	es, err := a.store.Read().WebhookEndpoints(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("webhook endpoints: %w", err)
	}
	out := []*WebhookEndpoint{}
	for _, e := range es {
		out = append(out, &WebhookEndpoint{ID: e.ID, URL: e.URL, Events: e.Events, Created: e.Created})
	}
	return out, nil
}

// DeleteWebhookEndpoint is DELETE /webhooks/endpoints/{id} (admin): the
// endpoint gets nothing more, its pending deliveries included.
func (a *App) DeleteWebhookEndpoint(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		gone, err := q.DeleteWebhookEndpoint(ctx, p.Account.ID, id, a.Unix())
		if err != nil {
			return err
		}
		if !gone {
			return store.ErrNotFound
		}
		return a.AuditIn(ctx, q, p, "webhook.endpoint.delete", "webhook_endpoint", i64s(id), OutcomeOK)
	})
	return StoreErr("webhook endpoint", err, webhookEndpointNotFoundMsg)
}

// EndpointDeliveries is GET /webhooks/endpoints/{id}/deliveries (admin):
// newest first, a page of limit before the delivery id before.
func (a *App) EndpointDeliveries(ctx context.Context, p *clinic.Principal, id, before int64, limit int) (clinic.Page[*WebhookDelivery], error) {
	if err := RequireAdmin(p); err != nil {
		return clinic.Page[*WebhookDelivery]{}, err
	}
	if _, err := a.store.Read().WebhookEndpointByID(ctx, p.Account.ID, id); err != nil {
		return clinic.Page[*WebhookDelivery]{}, StoreErr("webhook endpoint", err, webhookEndpointNotFoundMsg)
	}
	return a.deliveryPage(limit, func(n int) ([]*store.OutboxRecord, error) {
		return a.store.Read().EndpointOutbox(ctx, p.Account.ID, id, before, n)
	})
}

// deliverEvent makes one attempt of an event's delivery to its endpoint:
// the URL and secret read now; a new id and timestamp each time, the data
// fixed at commit.
func (a *App) deliverEvent(ctx context.Context, it store.OutboxItem) (int, error) {
	e, err := a.store.Read().WebhookEndpointByID(ctx, it.AccountID, it.EndpointID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, errSkip("the endpoint was removed")
	}
	if err != nil {
		return 0, err
	}
	secret, err := a.Unseal(e.SealedSecret)
	if err != nil {
		return 0, errSkip("endpoint secret unreadable: check that every process has the same server key")
	}
	var ev eventItem
	if err := json.Unmarshal([]byte(it.Payload), &ev); err != nil {
		return 0, errSkip("unreadable event")
	}
	acct, err := a.accountByID(ctx, it.AccountID)
	if err != nil {
		return 0, err
	}
	now, id := a.Unix(), newEventID()
	body, _ := json.Marshal(eventEnvelope{ID: id, Type: ev.Type, Created: now, AccountCode: acct.Code, Version: eventVersion, Data: ev.Data})
	return a.webhooks.Send(ctx, webhook.Delivery{URL: e.URL, ID: id, Timestamp: now, Body: body, Secret: secret})
}

// emitMove emits the events of visit v's move by action to state to.
func (a *App) emitMove(ctx context.Context, q *store.Q, v *clinic.Visit, action string, to int, m store.VisitMove) error {
	moved := *v
	if m.ProviderID != 0 {
		moved.ProviderID = m.ProviderID
	}
	moved.Outcome = m.Outcome
	var types []string
	switch {
	case action == ActInProgress:
		types = []string{EventVisitStarted}
	case action == ActClose:
		types = []string{EventVisitEnded}
	case action == ActCancel:
		types = []string{EventVisitCancelled}
		if v.Kind == clinic.KindAppointment {
			types = append(types, EventAppointmentCancelled)
			switch m.Outcome {
			case clinic.OutcomeNoShow:
				types = append(types, EventAppointmentNoShow)
			case clinic.OutcomeLateCancel:
				types = append(types, EventAppointmentLate)
			}
		}
	}
	for _, typ := range types {
		if err := a.emitVisit(ctx, q, typ, &moved, to, m.Reason); err != nil {
			return err
		}
	}
	return nil
}

// NoteHook is the data of note.signed: the visit, and its codes as the
// signing made them (diagnoses primary first, and the procedures).
type NoteHook struct {
	VisitID    string                  `json:"visit_id"`
	PatientID  string                  `json:"patient_id"`
	ProviderID string                  `json:"provider_id"`
	Diagnoses  []string                `json:"diagnoses"`
	Procedures []clinic.ClaimProcedure `json:"procedures"`
	SignedAt   int64                   `json:"signed_at"`
}

// UserHook is the data of user.created: who, of what type (spec: user
// types), and the integrator's code for them when it gave one.
type UserHook struct {
	UserID string `json:"user_id"`
	Type   int    `json:"type"`
	Code   string `json:"code,omitempty"`
}

// IntakeHook is the data of intake.submitted (no answers: the integrator
// reads the intake with GET /intakes/{id}).
type IntakeHook struct {
	IntakeID  string `json:"intake_id"`
	PatientID string `json:"patient_id"`
	RoomID    string `json:"room_id"`
}

// RecordingHook is the data of recording.ready: the recording (read with
// GET /visits/{id}/recordings, whose links expire) and its visit.
type RecordingHook struct {
	RecordingID string `json:"recording_id"`
	VisitID     string `json:"visit_id"`
	Start       int64  `json:"start"`
	End         int64  `json:"end"`
}
