package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
	"teleclinic/internal/webhook"
)

// TopicWebhook is the outbox topic of visit.message.created deliveries.
const TopicWebhook = "webhook"

// The event (spec: Events).
const (
	EventMessageCreated = "visit.message.created"
	eventVersion        = "1.0"
	// WebhookMaxAttempts is the spec's "up to 5 attempts".
	WebhookMaxAttempts = 5
)

// WebhookConfig is how deliveries are made.
type WebhookConfig struct {
	RetryInterval time.Duration // between attempts (default 60 s; whole seconds, at least 1)
	Timeout       time.Duration // a receiver's time to answer 2xx (default 30 s)
	AllowPrivate  bool          // let receivers be on private addresses: development only
}

// eventEnvelope is the payload the receiver gets (spec: Events).
type eventEnvelope struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Created     int64           `json:"created"`
	AccountCode string          `json:"account_code"`
	Version     string          `json:"version"`
	Data        json.RawMessage `json:"data"`
}

// DeliverWebhooks makes one delivery pass: it claims due deliveries and
// posts them concurrently, and returns how many it claimed. A claim lasts
// past the receiver's timeout, so no other worker makes the same attempt
// while this one may still be waiting for an answer; a worker that dies
// leaves its claim to lapse, and the attempt is made again.
func (a *App) DeliverWebhooks(ctx context.Context) int {
	lease := int64(a.cfg.Webhooks.Timeout/time.Second) + 5
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicWebhook, TopicEvent}, a.Unix(), lease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("webhook: claim", "err", err)
		}
		return 0
	}
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, err := a.deliverWebhook(ctx, it)
			// The clinic reads what failed; the operator's log also says
			// how, addresses included.
			if de := (*webhook.DeliveryError)(nil); errors.As(err, &de) {
				a.log.Info("webhook: delivery failed", "id", it.ID, "reason", de.Reason, "err", de.Err)
			}
			a.settle(ctx, "webhook", it, status, err, WebhookMaxAttempts, a.retryDelay())
		}()
	}
	wg.Wait()
	return len(items)
}

func (a *App) retryDelay() int64 {
	return max(int64((a.cfg.Webhooks.RetryInterval+time.Second/2)/time.Second), 1)
}

// deliverWebhook makes one attempt: a new id and timestamp each time, the
// data fixed at commit; the URL and secret are read now, so a changed
// setting applies to deliveries still pending.
func (a *App) deliverWebhook(ctx context.Context, it store.OutboxItem) (int, error) {
	if it.Topic == TopicEvent {
		return a.deliverEvent(ctx, it)
	}
	wh, err := a.store.Read().AccountWebhookByID(ctx, it.AccountID)
	if err != nil {
		return 0, err
	}
	if wh.URL == "" {
		return 0, errSkip("no webhook URL configured")
	}
	var secret []byte
	if wh.SealedSecret != "" {
		if secret, err = a.Unseal(wh.SealedSecret); err != nil {
			return 0, errSkip("webhook secret unreadable: check that every process has the same server key")
		}
	}
	now := a.Unix()
	id := newEventID()
	body, _ := json.Marshal(eventEnvelope{ID: id, Type: EventMessageCreated, Created: now, AccountCode: wh.Code, Version: eventVersion, Data: json.RawMessage(it.Payload)})
	return a.webhooks.Send(ctx, webhook.Delivery{URL: wh.URL, ID: id, Timestamp: now, Body: body, Secret: secret})
}

func newEventID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "evt_" + hex.EncodeToString(b)
}

// WebhookSettings are a clinic's webhook settings as the admin sees them:
// the secret itself only in the answer that set or generated it.
type WebhookSettings struct {
	AccountCode string
	URL         string
	SecretSet   bool
	Secret      string
}

// WebhookSettingsInput changes the settings; nil leaves a field as it is.
type WebhookSettingsInput struct {
	URL            *string // "" removes the webhook
	Secret         *string // "whsec_…"; "" removes signing
	GenerateSecret bool    // make a new secret and show it once
}

// WebhookSettings is GET /account/settings.
func (a *App) WebhookSettings(ctx context.Context, p *clinic.Principal) (*WebhookSettings, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	wh, err := a.store.Read().AccountWebhookByID(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("webhook settings: %w", err)
	}
	return &WebhookSettings{AccountCode: wh.Code, URL: wh.URL, SecretSet: wh.SealedSecret != ""}, nil
}

// SetWebhookSettings is POST /account/settings.
func (a *App) SetWebhookSettings(ctx context.Context, p *clinic.Principal, in WebhookSettingsInput) (*WebhookSettings, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := CheckFields(optLine("webhook_url", in.URL, 2048), optLine("webhook_secret", in.Secret, MaxLineChars)); err != nil {
		return nil, err
	}
	if in.GenerateSecret && in.Secret != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "give webhook_secret or generate_webhook_secret, not both.")
	}
	cur, err := a.store.Read().AccountWebhookByID(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("webhook settings: %w", err)
	}
	url, sealed := cur.URL, cur.SealedSecret
	if in.URL != nil {
		url = strings.TrimSpace(*in.URL)
		if url != "" {
			if err := webhook.CheckURL(url, a.cfg.Webhooks.AllowPrivate); err != nil {
				return nil, clinic.Errorf(clinic.EInvalid, "%s", err.Error())
			}
		}
	}
	shown := ""
	switch {
	case in.GenerateSecret:
		shown = webhook.NewSecret()
	case in.Secret != nil && *in.Secret != "":
		if _, err := webhook.ParseSecret(*in.Secret); err != nil {
			return nil, clinic.Errorf(clinic.EInvalid, "webhook_secret: %s.", err.Error())
		}
		shown = *in.Secret
	case in.Secret != nil:
		sealed = ""
	}
	if shown != "" {
		key, _ := webhook.ParseSecret(shown)
		if sealed, err = a.Seal(key); err != nil {
			return nil, err
		}
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.SetAccountWebhook(ctx, p.Account.ID, url, sealed, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "account.webhook.update", "account", p.Account.Code, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("webhook settings", err, "")
	}
	return &WebhookSettings{AccountCode: cur.Code, URL: url, SecretSet: sealed != "", Secret: shown}, nil
}

// SetWebhookURL sets a clinic's webhook URL from the command line.
func (a *App) SetWebhookURL(ctx context.Context, code, url string) error {
	acct, err := a.AccountByCode(ctx, code)
	if err != nil {
		return err
	}
	p := &clinic.Principal{Account: acct, Kind: clinic.CredSystem}
	_, err = a.SetWebhookSettings(ctx, p, WebhookSettingsInput{URL: &url})
	return err
}

// WebhookDelivery is one visit.message.created delivery and how it went.
type WebhookDelivery struct {
	ID          int64
	Event       string
	VisitID     string
	MessageID   string
	Attempts    int
	LastStatus  int    // the receiver's last HTTP status; 0 when it gave none
	LastError   string // why the last attempt failed
	NextAttempt int64  // unix seconds; 0 once finished
	Outcome     string // pending, sending, retrying, delivered or failed
	Created     int64
	Finished    int64
}

// Delivery outcomes.
const (
	OutcomePending   = "pending"
	OutcomeRetrying  = "retrying"
	OutcomeSending   = "sending"
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
)

func toDelivery(r *store.OutboxRecord, now int64) *WebhookDelivery {
	var ev messageEvent
	typ := EventMessageCreated
	if r.Topic == TopicEvent { // an endpoint's: {type, data}
		var item eventItem
		_ = json.Unmarshal([]byte(r.Payload), &item)
		typ = item.Type
		_ = json.Unmarshal(item.Data, &ev)
	} else {
		_ = json.Unmarshal([]byte(r.Payload), &ev)
	}
	d := &WebhookDelivery{ID: r.ID, Event: typ, VisitID: ev.VisitID, MessageID: ev.MessageID, Attempts: r.Attempts,
		LastStatus: r.LastStatus, LastError: r.LastError, Created: r.Created, Finished: r.Done}
	switch {
	case r.Done != 0 && r.LastError == "":
		d.Outcome = OutcomeDelivered
	case r.Done != 0:
		d.Outcome = OutcomeFailed
	case r.ClaimedUntil > now: // counted in attempts; its result is not in yet
		d.Outcome = OutcomeSending
	case r.Attempts == 0:
		d.Outcome, d.NextAttempt = OutcomePending, r.Due
	default:
		d.Outcome, d.NextAttempt = OutcomeRetrying, r.Due
	}
	return d
}

// MaxDeliveryList bounds one page of deliveries.
const MaxDeliveryList = 200

// WebhookDeliveries is GET /webhooks/deliveries: newest first, a page of
// limit (default 50) before the delivery id before.
func (a *App) WebhookDeliveries(ctx context.Context, p *clinic.Principal, before int64, limit int) (clinic.Page[*WebhookDelivery], error) {
	if err := RequireAdmin(p); err != nil {
		return clinic.Page[*WebhookDelivery]{}, err
	}
	return a.deliveryPage(limit, func(n int) ([]*store.OutboxRecord, error) {
		return a.store.Read().ListOutbox(ctx, p.Account.ID, TopicWebhook, before, n)
	})
}

// deliveryPage is a page of limit deliveries (default 50, at most
// MaxDeliveryList) that list reads (it is asked one more, to know whether
// more follow).
func (a *App) deliveryPage(limit int, list func(n int) ([]*store.OutboxRecord, error)) (clinic.Page[*WebhookDelivery], error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxDeliveryList)
	rs, err := list(limit + 1)
	if err != nil {
		return clinic.Page[*WebhookDelivery]{}, fmt.Errorf("deliveries: %w", err)
	}
	pg := clinic.PageOf(rs, limit, func(r *store.OutboxRecord) int64 { return r.ID })
	out := make([]*WebhookDelivery, len(pg.Items))
	for i, r := range pg.Items {
		out[i] = toDelivery(r, a.Unix())
	}
	return clinic.Page[*WebhookDelivery]{Items: out, Next: pg.Next}, nil
}

var errDeliveryNotFound = clinic.Errorf(clinic.ENotFound, "Delivery not found.")

// Redeliver is POST /webhooks/deliveries/{id}/redeliver (the spec's
// webhook's deliveries and the endpoints' alike): the delivery is
// due now with a fresh set of attempts, whatever became of it before; one
// being attempted at this moment answers 409.
func (a *App) Redeliver(ctx context.Context, p *clinic.Principal, id int64) (*WebhookDelivery, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	// The answer is the requeued state read inside the transaction: once it
	// commits, a dispatcher may claim the delivery at any moment.
	var ok bool
	var r *store.OutboxRecord
	err := a.store.Tx(ctx, func(q *store.Q) error {
		// The spec's webhook's delivery, or an endpoint's.
		topic := TopicWebhook
		_, err := q.OutboxRecordByID(ctx, p.Account.ID, topic, id)
		if errors.Is(err, store.ErrNotFound) {
			topic = TopicEvent
			_, err = q.OutboxRecordByID(ctx, p.Account.ID, topic, id)
		}
		if err != nil {
			return err
		}
		if ok, err = q.RequeueOutbox(ctx, p.Account.ID, topic, id, a.Unix()); err != nil || !ok {
			return err
		}
		if r, err = q.OutboxRecordByID(ctx, p.Account.ID, topic, id); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "webhook.redeliver", "webhook_delivery", i64s(id), OutcomeOK)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errDeliveryNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redeliver: %w", err)
	}
	if !ok {
		return nil, clinic.Errorf(clinic.EConflict, "Delivery %d is being attempted right now; try again when the attempt ends.", id)
	}
	a.kickWebhooks()
	return toDelivery(r, a.Unix()), nil
}
