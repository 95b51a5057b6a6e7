package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Message limits. The spec gives the page sizes; the others are ours.
const (
	MessagePageDefault    = 25
	MessagePageMax        = 200
	MaxMessageChars       = 10000
	MaxMessageAttachments = 10
)

// closedForMessages are the visit statuses whose thread takes no new
// messages (spec: Errors, 409).
var closedForMessages = []int{clinic.VisitCompleted, clinic.VisitCancelled}

// Message is one entry of a visit's thread as readers see it.
type Message struct {
	ID          int64
	VisitID     int64
	Type        string
	Actor       MessageActor
	Content     string
	Attachments []int64
	CreatedUS   int64 // microseconds since the epoch
}

// MessageActor is who wrote a message.
type MessageActor struct {
	ID          int64
	Type        int // the user type: 200 a patient, 400 a provider
	DisplayName string
}

// messageVisit finds a visit for its thread, with the fields
// store.ThreadVisit reads: unknown is 404; a caller who is not its patient,
// its assigned provider or one of its hosts (see awaitsProvider) is 403.
func (a *App) messageVisit(ctx context.Context, p *clinic.Principal, id int64) (*clinic.ThreadVisit, error) {
	v, err := a.store.Read().ThreadVisit(ctx, p.Account.ID, id)
	return a.participantVisit(ctx, p, v, err)
}

// participantVisit is the outcome (v, err) of reading a visit's thread
// row, as p may use it: not found, or refused unless p takes part.
func (a *App) participantVisit(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, err error) (*clinic.ThreadVisit, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrVisitNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("visit: %w", err)
	}
	if ok, err := a.takesPart(ctx, p, v); err != nil || !ok {
		return nil, cmp.Or(err, errNotInThread)
	}
	return v, nil
}

// takesPart says whether p is a participant of v's thread: those who may
// see the visit, less the admin.
func (a *App) takesPart(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit) (bool, error) {
	if p.IsAdmin() || p.UserID() == 0 {
		return false, nil
	}
	return a.canSeeVisit(ctx, p, v)
}

var errNotInThread error = clinic.Errorf(clinic.EForbidden, "Only the visit's patient, its provider and its hosts may read or write its messages.")

// MessageQuery is GET /api/visits/{id}/messages.
type MessageQuery struct {
	Limit, Skip, Page *int
	Sort, Order       string
}

// ListMessages returns a page of a visit's thread and the thread's length.
// Oldest first unless sort or order asks for newest first. The order is the
// commit order, the same for every reader, so a reader that asks with skip
// set to the number it has seen gets exactly the new messages.
func (a *App) ListMessages(ctx context.Context, p *clinic.Principal, visitID int64, in MessageQuery) ([]*Message, int, error) {
	if err := RequireUser(p); err != nil {
		return nil, 0, err
	}
	limit, skip := MessagePageDefault, 0
	if in.Limit != nil {
		if *in.Limit < 1 {
			return nil, 0, clinic.Errorf(clinic.EInvalid, "limit must be at least 1.")
		}
		limit = min(*in.Limit, MessagePageMax)
	}
	switch {
	case in.Skip != nil:
		if *in.Skip < 0 || *in.Skip > MaxSkip {
			return nil, 0, clinic.Errorf(clinic.EInvalid, "skip must be from 0 to %d.", MaxSkip)
		}
		skip = *in.Skip
	case in.Page != nil:
		if *in.Page < 1 || *in.Page > MaxSkip/MessagePageMax {
			return nil, 0, clinic.Errorf(clinic.EInvalid, "page must be from 1 to %d.", MaxSkip/MessagePageMax)
		}
		skip = (*in.Page - 1) * limit
	}
	desc, err := messageOrder(in.Sort, in.Order)
	if err != nil {
		return nil, 0, err
	}
	v, err := a.messageVisit(ctx, p, visitID)
	if err != nil {
		return nil, 0, a.AuditOutcome(ctx, p, "visit.messages.read", "visit", i64s(visitID), err)
	}
	// The page is a range of places up to the visit's count, so the page
	// and the length agree: a reader that skips as many messages as the
	// length says never passes over one.
	total := v.MessageCount
	from, to := skip+1, min(skip+limit, total)
	if desc {
		from, to = max(1, total-skip-limit+1), total-skip
	}
	out, err := a.threadMessages(ctx, p.Account.ID, v, from, to)
	if err != nil {
		return nil, 0, err
	}
	if desc {
		slices.Reverse(out)
	}
	if err := a.Audit(ctx, p, "visit.messages.read", "visit", i64s(v.ID), OutcomeOK); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// threadMessages reads places from to to of a visit's thread (v as
// store.ThreadVisit reads it), oldest first, with their authors' names.
func (a *App) threadMessages(ctx context.Context, accountID int64, v *clinic.ThreadVisit, from, to int) ([]*Message, error) {
	rows, err := a.store.ThreadPage(ctx, accountID, v.ID, v.Created, from, to)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	return a.namedMessages(ctx, accountID, rows)
}

// namedMessages are rows with their authors' current names, read at once.
func (a *App) namedMessages(ctx context.Context, accountID int64, rows []*clinic.Message) ([]*Message, error) {
	authors := make([]int64, len(rows))
	for i, m := range rows {
		authors[i] = m.AuthorID
	}
	names, err := a.store.UserNames(ctx, accountID, authors)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	out := make([]*Message, len(rows))
	for i, m := range rows {
		out[i] = toMessage(m, names[m.AuthorID])
	}
	return out, nil
}

// messageOrder reads sort (a field, optionally with ":asc" or ":desc") and
// order; order wins when both give a direction.
func messageOrder(sort, order string) (desc bool, err error) {
	field, dir, _ := strings.Cut(strings.TrimSpace(sort), ":")
	switch field {
	case "", "created", "id":
	default:
		return false, clinic.Errorf(clinic.EInvalid, "sort must be created (optionally created:asc or created:desc).")
	}
	if o := strings.TrimSpace(order); o != "" {
		dir = o
	}
	switch strings.ToLower(dir) {
	case "", "asc":
		return false, nil
	case "desc":
		return true, nil
	}
	return false, clinic.Errorf(clinic.EInvalid, "order must be asc or desc.")
}

// toMessage is a stored message as the API shows it.
func toMessage(m *clinic.Message, authorName string) *Message {
	out := &Message{ID: m.ID, VisitID: m.VisitID, Type: m.Type, Content: m.Content, Attachments: m.Attachments, CreatedUS: m.CreatedUS,
		Actor: MessageActor{ID: m.AuthorID, Type: m.ActorType, DisplayName: authorName}}
	if out.Attachments == nil {
		out.Attachments = []int64{}
	}
	return out
}

// NewMessage is POST /api/visits/{id}/messages.
type NewMessage struct {
	Content       *string
	AttachmentIDs []int64
}

// PostMessage appends a message to a visit's thread. In the same
// transaction it writes the visit.message.created delivery for the clinic's
// webhook, the notifications of the visit's other participants and the
// Audit entry; a closed visit answers 409 and its thread stays readable.
func (a *App) PostMessage(ctx context.Context, p *clinic.Principal, visitID int64, in NewMessage) (*Message, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if in.Content == nil || strings.TrimSpace(*in.Content) == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "content is required and must not be empty.")
	}
	content := *in.Content
	if !utf8.ValidString(content) || strings.ContainsRune(content, 0) {
		return nil, clinic.Errorf(clinic.EInvalid, "content must be UTF-8 text.")
	}
	if n := utf8.RuneCountInString(content); n > MaxMessageChars {
		return nil, clinic.Errorf(clinic.EInvalid, "content must be at most %d characters; it has %d.", MaxMessageChars, n)
	}
	v, err := a.messageVisit(ctx, p, visitID)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit.message.create", "visit", i64s(visitID), err)
	}
	attachments, err := a.messageAttachments(ctx, p, in.AttachmentIDs)
	if err != nil {
		return nil, err
	}
	if slices.Contains(closedForMessages, v.Status) {
		return nil, errClosedThread(v.ID, v.Status)
	}
	m, mp, err := a.newPost(ctx, p, v, content, attachments)
	if err != nil {
		return nil, err
	}
	// The post's statement checks that the visit is still open and has the
	// parties read above (store.MessagePost.Parties): one closed or
	// reassigned since, by this process or another, writes nothing.
	err = a.store.PostMessage(ctx, mp)
	if errors.Is(err, store.ErrNotFound) {
		return nil, clinic.Errorf(clinic.EConflict, "Visit %d changed while the message was being posted; read it and send again.", v.ID)
	}
	if err != nil {
		return nil, StoreErr("post message", err, "")
	}
	a.publishMessage(v, m)
	if mp.Announced {
		a.kickWebhooks()
	}
	if mp.Pushed {
		a.kickPush()
	}
	return toMessage(m, p.User.FullName()), nil
}

// newPost is the post of content to v by the caller: the message and
// everything its commit writes with it.
func (a *App) newPost(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit, content string, attachments []int64) (*clinic.Message, *store.MessagePost, error) {
	u := p.User
	m := &clinic.Message{AccountID: p.Account.ID, VisitID: v.ID, AuthorID: u.ID, ActorType: u.Type, Content: content, Attachments: attachments}
	actor := "provider"
	m.Type = "provider_message"
	if v.MemberID == u.ID {
		actor, m.Type = "patient", "patient_message"
	}
	now := a.now()
	m.CreatedUS = now.UnixMicro()
	// Who is told is read before the post, from the reader pool: the post
	// holds SQLite's only writer, and on PostgreSQL it is one statement
	// (store.PostMessage), which also finds the users' devices.
	uids, err := participants(ctx, a.store.Read(), v)
	if err != nil {
		return nil, nil, fmt.Errorf("post message: %w", err)
	}
	uids = slices.DeleteFunc(uids, func(uid int64) bool { return uid == u.ID })
	slices.Sort(uids)
	uids = slices.Compact(uids)
	ts := now.Unix()
	mp := &store.MessagePost{Message: m, Closed: closedForMessages,
		Parties:        &store.VisitParties{Kind: v.Kind, MemberID: v.MemberID, ProviderID: v.ProviderID, RoomID: v.RoomID},
		Webhook:        store.OutboxItem{AccountID: p.Account.ID, Topic: TopicWebhook, Created: ts, Due: ts},
		WebhookPayload: messageEventPayload(v.ID, actor, ts),
		Notification: clinic.Notification{AccountID: p.Account.ID, Type: NotifyMessage, Title: "New message from " + u.FullName(),
			VisitID: v.ID, Created: ts, MtimeMS: now.UnixMilli()},
		NotifyUsers: uids,
		PushTypes:   a.channelsOn(),
		PushTopic:   TopicPush, PushPayload: pushPayload,
		Audit: *a.auditEntry(p, "visit.message.create", "visit_message", "", OutcomeOK)}
	return m, mp, nil
}

func errClosedThread(id int64, status int) error {
	return clinic.Errorf(clinic.EConflict, "Visit %d is %s and closed for new messages; its history stays readable. A new concern needs a new e-consult.", id, StatusName(status))
}

// messageAttachments checks that every attachment is a file the sender may
// see.
func (a *App) messageAttachments(ctx context.Context, p *clinic.Principal, ids []int64) ([]int64, error) {
	if len(ids) > MaxMessageAttachments {
		return nil, clinic.Errorf(clinic.EInvalid, "attachment_ids may name at most %d files.", MaxMessageAttachments)
	}
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		f, err := a.store.Read().FileByID(ctx, p.Account.ID, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, clinic.Errorf(clinic.EInvalid, "attachment_ids: file %d does not exist or is not yours to share.", id)
		}
		if err != nil {
			return nil, fmt.Errorf("attachments: %w", err)
		}
		ok, err := a.canSeeFile(ctx, p, f)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, clinic.Errorf(clinic.EInvalid, "attachment_ids: file %d does not exist or is not yours to share.", id)
		}
		out = append(out, id)
	}
	return out, nil
}

// participants are the users a visit's events concern: its patient, its
// provider, or while an e-consult awaits one, the providers of its room.
func participants(ctx context.Context, q *store.Q, v *clinic.ThreadVisit) ([]int64, error) {
	ids := []int64{v.MemberID}
	if v.ProviderID != 0 {
		return append(ids, v.ProviderID), nil
	}
	if !awaitsProvider(v) {
		return ids, nil
	}
	provs, err := q.RoomUsers(ctx, v.AccountID, v.RoomID, clinic.UserProvider)
	if err != nil {
		return nil, err
	}
	for _, u := range provs {
		ids = append(ids, u.ID)
	}
	return ids, nil
}

// messageEvent is the outbox payload of a visit.message.created delivery:
// the spec's data object, fixed when the message commits.
type messageEvent struct {
	VisitID   string `json:"visit_id"`
	MessageID string `json:"message_id"`
	ActorType string `json:"actor_type"`
	TS        int64  `json:"ts"`
}

// messageEventPayload is the payload of a message's webhook delivery with a
// hole for the message id, which the message's insert assigns.
func messageEventPayload(visitID int64, actor string, ts int64) store.Template {
	const hole = "$message_id$"
	b, _ := json.Marshal(messageEvent{VisitID: i64s(visitID), MessageID: hole, ActorType: actor, TS: ts})
	return strings.Split(string(b), hole)
}

// MarkThreadRead records that the caller, who may read visit id's thread,
// has been shown it up to place seen (the portal's visit page, as it
// draws the thread): the dashboard counts what is newer as unread. Only a
// provider's place is kept: the dashboard is theirs, and a patient's
// every redraw need not write.
func (a *App) MarkThreadRead(ctx context.Context, p *clinic.Principal, id int64, seen int) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	v, err := a.messageVisit(ctx, p, id)
	if err != nil {
		return err
	}
	if seen <= 0 || !IsProvider(p) {
		return nil
	}
	if err := a.store.Write().MarkThreadRead(ctx, p.Account.ID, v.ID, p.UserID(), min(seen, v.MessageCount)); err != nil {
		return fmt.Errorf("mark read: %w", err)
	}
	return nil
}
