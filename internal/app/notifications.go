package app

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Endpoint types (spec: Push endpoint and notification).
const (
	EndpointEmail = 10
	EndpointAPNs  = 30
	EndpointFCM   = 40
)

// Notification types: what happened, as clients switch on it.
const (
	NotifyMessage        = "visit_message"
	NotifyVisitConfirmed = "visit_confirmed"
	NotifyVisitStarted   = "visit_started"
	NotifyVisitCompleted = "visit_completed"
	NotifyVisitCancelled = "visit_cancelled"
)

// TopicPush is the outbox topic of notifications on their way to one endpoint.
const TopicPush = "push"

// NotificationPageDefault is GET /notifications' size (spec: Limits).
const (
	NotificationPageDefault = 10
	NotificationPageMax     = 100
)

var (
	apnsToken = regexp.MustCompile(`^[0-9a-fA-F]{32,200}$`)
	fcmToken  = regexp.MustCompile(`^[A-Za-z0-9_:\-.]+$`)
)

var errEndpointNotFound = clinic.Errorf(clinic.ENotFound, "Endpoint not found.")

func parseEndpointType(s string, required bool) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" && !required {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || (n != EndpointEmail && n != EndpointAPNs && n != EndpointFCM) {
		return 0, clinic.Errorf(clinic.EInvalid, "type must be 30 (Apple push), 40 (Google push) or 10 (email).")
	}
	return n, nil
}

// RegisterEndpoint is POST /endpoints. Registering an address again returns
// its endpoint; a device token registered by another user of the clinic
// moves to the caller, since a device belongs to whoever last signed in on it.
func (a *App) RegisterEndpoint(ctx context.Context, p *clinic.Principal, key, typ string) (*clinic.Endpoint, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	t, err := parseEndpointType(typ, true)
	if err != nil {
		return nil, err
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "key is required: the device token, registration id or email address.")
	}
	switch t {
	case EndpointAPNs:
		if !apnsToken.MatchString(key) {
			return nil, clinic.Errorf(clinic.EInvalid, "key must be an Apple device token (hexadecimal).")
		}
		key = strings.ToLower(key)
	case EndpointFCM:
		if len(key) < 16 || len(key) > 4096 || !fcmToken.MatchString(key) {
			return nil, clinic.Errorf(clinic.EInvalid, "key must be a Firebase registration token.")
		}
	case EndpointEmail:
		if len(key) > 254 || !emailRE.MatchString(key) {
			return nil, clinic.Errorf(clinic.EInvalid, "key must be an email address.")
		}
	}
	uid, now := p.UserID(), a.Unix()
	var out *clinic.Endpoint
	err = a.store.Tx(ctx, func(q *store.Q) error {
		e, err := q.EndpointByAddress(ctx, p.Account.ID, t, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			e = &clinic.Endpoint{AccountID: p.Account.ID, UserID: uid, Type: t, Address: key, Created: now, Modified: now}
			if err := q.CreateEndpoint(ctx, e); err != nil {
				return err
			}
		case err != nil:
			return err
		case e.UserID != uid:
			if err := q.MoveEndpoint(ctx, p.Account.ID, e.ID, uid, now); err != nil {
				return err
			}
			e.UserID, e.Modified = uid, now
		}
		out = e
		return a.AuditIn(ctx, q, p, "endpoint.register", "endpoint", i64s(e.ID), OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) { // registered by a concurrent request: it is there now
		return a.RegisterEndpoint(ctx, p, key, typ)
	}
	return out, StoreErr("register endpoint", err, "")
}

// Endpoints is GET /endpoints: the caller's own.
func (a *App) Endpoints(ctx context.Context, p *clinic.Principal, typ string) ([]*clinic.Endpoint, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	t, err := parseEndpointType(typ, false)
	if err != nil {
		return nil, err
	}
	es, err := a.store.Read().UserEndpoints(ctx, p.Account.ID, p.UserID(), t)
	return es, StoreErr("endpoints", err, "")
}

// Endpoint is GET /endpoints/{id}: only the caller's own; another's is not found.
func (a *App) Endpoint(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Endpoint, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	n := id
	e, err := a.store.Read().UserEndpoint(ctx, p.Account.ID, p.UserID(), n)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errEndpointNotFound
	}
	return e, StoreErr("endpoint", err, "")
}

// DeleteEndpoint is DELETE /endpoints/{id}.
func (a *App) DeleteEndpoint(ctx context.Context, p *clinic.Principal, id int64) (int64, error) {
	if err := RequireUser(p); err != nil {
		return 0, err
	}
	n := id
	err := a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.DeleteEndpoint(ctx, p.Account.ID, p.UserID(), n); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "endpoint.delete", "endpoint", i64s(n), OutcomeOK)
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, errEndpointNotFound
	}
	return n, StoreErr("delete endpoint", err, "")
}

// notify tells users of a clinic about something: one notification each,
// and a push queued for each of their endpoints of a channel that is on.
// eps are the users' endpoints, read by the caller (before the transaction
// when it can: a push queued for an endpoint removed since is skipped at
// delivery). It reports whether it queued a push.
func (a *App) notify(ctx context.Context, q *store.Q, accountID int64, userIDs []int64, typ, title string, visitID int64, eps []*clinic.Endpoint) (bool, error) {
	now := a.now()
	n := clinic.Notification{AccountID: accountID, Type: typ, Title: title, VisitID: visitID, Created: now.Unix(), MtimeMS: now.UnixMilli()}
	push := slices.DeleteFunc(slices.Clone(eps), func(e *clinic.Endpoint) bool { return !a.channelOn(e.Type) })
	return q.Notify(ctx, n, userIDs, push, TopicPush, pushPayload)
}

// channelOn reports whether notifications of an endpoint type are sent:
// email always (logged when no mail server is set), push once configured.
func (a *App) channelOn(typ int) bool {
	switch typ {
	case EndpointEmail:
		return true
	case EndpointAPNs:
		return a.cfg.APNs != nil
	case EndpointFCM:
		return a.cfg.FCM != nil
	}
	return false
}

// channelsOn are the endpoint types whose notifications are sent.
func (a *App) channelsOn() []int {
	var on []int
	for _, t := range []int{EndpointEmail, EndpointAPNs, EndpointFCM} {
		if a.channelOn(t) {
			on = append(on, t)
		}
	}
	return on
}

// pushItem is the outbox payload of a notification for one endpoint. It
// names rows rather than copying addresses, so a removed endpoint is not
// written to.
type pushItem struct {
	EndpointID     int64 `json:"endpoint_id"`
	NotificationID int64 `json:"notification_id"`
}

// pushPayload is a pushItem's encoding with holes for the endpoint id and
// the notification id, so a store that assigns the notification's id in
// the same statement can write it (a test holds it to json.Marshal's).
var pushPayload = store.Template{`{"endpoint_id":`, `,"notification_id":`, `}`}

// notifyVisitMove tells a visit's participants, except the one who acted,
// that it changed state.
func (a *App) notifyVisitMove(ctx context.Context, q *store.Q, p *clinic.Principal, v *clinic.Visit, action string) error {
	var typ, title string
	switch action {
	case ActConfirm:
		typ, title = NotifyVisitConfirmed, "Your visit is confirmed"
	case ActInProgress:
		typ, title = NotifyVisitStarted, "Your visit has started"
	case ActClose:
		typ, title = NotifyVisitCompleted, "Your visit is complete"
	case ActCancel:
		typ, title = NotifyVisitCancelled, "Your visit was cancelled"
	default:
		return nil
	}
	uids, err := participants(ctx, q, v.Thread())
	if err != nil {
		return err
	}
	uids = slices.DeleteFunc(uids, func(uid int64) bool { return uid == p.UserID() })
	eps, err := q.UsersEndpoints(ctx, p.Account.ID, uids)
	if err != nil {
		return err
	}
	_, err = a.notify(ctx, q, p.Account.ID, uids, typ, title, v.ID, eps)
	return err
}

// notificationPage is how many notifications a page asked for size holds
// (a size below 1 is refused).
func notificationPage(size *int) int {
	if size == nil {
		return NotificationPageDefault
	}
	return PageSize(*size, NotificationPageDefault, NotificationPageMax)
}

// Notifications is GET /notifications: newest first, size at a time, those
// before last (milliseconds) when given, after the notification before
// when given.
func (a *App) Notifications(ctx context.Context, p *clinic.Principal, size *int, last, before int64) (clinic.Page[*clinic.Notification], error) {
	var none clinic.Page[*clinic.Notification]
	if err := RequireUser(p); err != nil {
		return none, err
	}
	if size != nil && *size < 1 {
		return none, clinic.Errorf(clinic.EInvalid, "size must be at least 1.")
	}
	n := notificationPage(size)
	if last < 0 {
		return none, clinic.Errorf(clinic.EInvalid, "last must be a timestamp in milliseconds.")
	}
	// before is the caller's notification the page goes on after: by
	// (mtime, id), so notifications of one millisecond, which last skips,
	// are each on a page.
	var after *clinic.Notification
	if before != 0 {
		var err error
		after, err = a.store.Read().UserNotification(ctx, p.Account.ID, p.UserID(), before)
		if errors.Is(err, store.ErrNotFound) || before < 0 {
			return none, clinic.Errorf(clinic.EInvalid, "before is the id of one of your notifications.")
		}
		if err != nil {
			return none, fmt.Errorf("notifications: %w", err)
		}
	}
	ns, err := a.store.Read().UserNotifications(ctx, p.Account.ID, p.UserID(), last, after, n+1)
	if err != nil {
		return none, StoreErr("notifications", err, "")
	}
	return clinic.PageOf(ns, n, func(x *clinic.Notification) int64 { return x.ID }), nil
}

var errNotificationNotFound = clinic.Errorf(clinic.ENotFound, "Notification not found.")

// ReadNotification is PUT /notifications/{id}.
func (a *App) ReadNotification(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Notification, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	n := id
	if err := a.store.Write().MarkNotificationRead(ctx, p.Account.ID, p.UserID(), n); errors.Is(err, store.ErrNotFound) {
		return nil, errNotificationNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read notification: %w", err)
	}
	out, err := a.store.Read().UserNotification(ctx, p.Account.ID, p.UserID(), n)
	return out, StoreErr("read notification", err, "Notification not found.")
}

// Badge is GET /notifications/badge: how many notifications are new.
func (a *App) Badge(ctx context.Context, p *clinic.Principal) (int, error) {
	if err := RequireUser(p); err != nil {
		return 0, err
	}
	n, err := a.store.Read().Badge(ctx, p.Account.ID, p.UserID())
	return n, StoreErr("badge", err, "")
}

// ResetBadge is POST /notifications/badge.
func (a *App) ResetBadge(ctx context.Context, p *clinic.Principal) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	return StoreErr("reset badge", a.store.Write().ResetBadge(ctx, p.Account.ID, p.UserID()), "")
}
