package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/mail"
	"teleclinic/internal/metrics"
	"teleclinic/internal/push"
	"teleclinic/internal/store"
)

// Delivery schedules of the outbox topics.
const (
	mailLease       = 60 // seconds a worker holds a claimed message
	mailMaxAttempts = 8
	pushLease       = 60
	pushMaxAttempts = 5
	batchSize       = 64 // items one pass claims
)

// DeliverMail makes one delivery pass of the mail topic through s and
// returns how many messages it sent.
func (a *App) DeliverMail(ctx context.Context, s mail.Sender) int {
	_, sent := a.mailPass(ctx, s)
	return sent
}

func (a *App) mailPass(ctx context.Context, s mail.Sender) (claimed, sent int) {
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicMail}, a.Unix(), mailLease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("mail: claim", "err", err)
		}
		return 0, 0
	}
	for _, it := range items {
		var m mailMessage
		raw, err := a.Unseal(it.Payload)
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil {
			// Sealed with another server key: no retry can read it.
			a.log.Error("mail: unreadable outbox item; check that every process has the same server key", "id", it.ID)
			a.finish(ctx, it.ID, 0, "unreadable: server key mismatch")
			continue
		}
		sendCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = s.Send(sendCtx, mail.Message{To: m.To, Subject: m.Subject, Body: m.Body, Calendar: m.Calendar})
		cancel()
		if err == nil {
			sent++
		}
		a.settle(ctx, "mail", it, 0, err, mailMaxAttempts, int64(30)<<min(it.Attempts, 8))
	}
	return len(items), sent
}

// settle records an attempt's result: done on success or after the last
// attempt, otherwise due again after delay seconds.
func (a *App) settle(ctx context.Context, topic string, it store.OutboxItem, status int, err error, maxAttempts int, delay int64) {
	now := a.Unix()
	var uerr error
	var skip errSkip
	switch {
	case errors.As(err, &skip):
		a.cfg.Metrics.CountDelivery(topic, "skipped")
		uerr = a.store.Write().FinishOutbox(ctx, it.ID, now, status, string(skip))
	case err == nil:
		a.cfg.Metrics.CountDelivery(topic, "delivered")
		uerr = a.store.Write().FinishOutbox(ctx, it.ID, now, status, "")
	case it.Attempts >= maxAttempts:
		a.cfg.Metrics.CountDelivery(topic, "gave_up")
		a.log.Warn(topic+": giving up", "id", it.ID, "attempts", it.Attempts, "err", err)
		uerr = a.store.Write().FinishOutbox(ctx, it.ID, now, status, errText(err))
	default:
		a.cfg.Metrics.CountDelivery(topic, "retry")
		uerr = a.store.Write().RetryOutbox(ctx, it.ID, now+delay, status, errText(err))
	}
	if uerr != nil && ctx.Err() == nil {
		a.log.Error(topic+": update outbox", "id", it.ID, "err", uerr)
	}
}

func (a *App) finish(ctx context.Context, id int64, status int, why string) {
	if err := a.store.Write().FinishOutbox(ctx, id, a.Unix(), status, why); err != nil && ctx.Err() == nil {
		a.log.Error("outbox: finish", "id", id, "err", err)
	}
}

// errText bounds what an outbox row keeps of an error.
func errText(err error) string {
	s := err.Error()
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

// DeliverPush makes one delivery pass of notifications to endpoints and
// returns how many items it claimed. A device whose token is no longer
// registered loses its endpoint.
func (a *App) DeliverPush(ctx context.Context) int {
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicPush}, a.Unix(), pushLease, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("push: claim", "err", err)
		}
		return 0
	}
	for _, it := range items {
		err := a.pushOne(ctx, it)
		a.settle(ctx, "push", it, 0, err, pushMaxAttempts, int64(30)<<min(it.Attempts, 6))
	}
	return len(items)
}

// errSkip ends an item that has nothing left to deliver: it is recorded as
// the item's last error and not retried.
type errSkip string

func (e errSkip) Error() string { return string(e) }

func (a *App) pushOne(ctx context.Context, it store.OutboxItem) error {
	var pi pushItem
	if err := json.Unmarshal([]byte(it.Payload), &pi); err != nil {
		return errSkip("unreadable payload")
	}
	q := a.store.Read()
	ep, err := q.EndpointByID(ctx, it.AccountID, pi.EndpointID)
	var n *clinic.Notification
	if err == nil {
		n, err = q.UserNotification(ctx, it.AccountID, ep.UserID, pi.NotificationID)
	}
	if errors.Is(err, store.ErrNotFound) {
		// The endpoint was removed, or the device now belongs to someone else.
		return errSkip("endpoint removed")
	}
	if err != nil {
		return err
	}
	badge, err := q.Badge(ctx, it.AccountID, ep.UserID)
	if err != nil {
		return err
	}
	sendCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch ep.Type {
	case EndpointEmail:
		return a.cfg.Mail.Send(sendCtx, mail.Message{To: ep.Address, Subject: n.Title,
			Body: n.Title + ".\n\nOpen the app to see it. This message carries no health information.\n"})
	case EndpointAPNs, EndpointFCM:
		s := a.cfg.APNs
		if ep.Type == EndpointFCM {
			s = a.cfg.FCM
		}
		if s == nil {
			return errSkip("push channel not configured")
		}
		err := s.Send(sendCtx, push.Message{Token: ep.Address, Title: n.Title, Badge: badge,
			Data: map[string]string{"notification_id": i64s(n.ID), "type": n.Type, "visit_id": i64s(n.VisitID)}})
		if errors.Is(err, push.ErrUnregistered) {
			if derr := a.store.Write().DeleteEndpoint(ctx, it.AccountID, ep.UserID, ep.ID); derr != nil && !errors.Is(derr, store.ErrNotFound) {
				return derr
			}
			return errSkip("device unregistered; endpoint removed")
		}
		return err
	}
	return errSkip("unknown endpoint type")
}

// WriteMetrics writes the outbox backlog, the audit journal's backlog and
// the database pools' waits:
// the families computed at each scrape of /metrics.
func (a *App) WriteMetrics(ctx context.Context, w *metrics.Writer) {
	backlog, err := a.store.Read().OutboxBacklogByTopic(ctx, a.Unix())
	if err != nil {
		a.log.Warn("metrics: outbox backlog", "err", err)
	}
	w.Help("teleclinic_outbox_backlog", "gauge", "Undelivered outbox items by topic.")
	w.Help("teleclinic_outbox_oldest_due_seconds", "gauge", "How long the oldest due outbox item of a topic has waited.")
	for _, topic := range []string{TopicWebhook, TopicEvent, TopicPush, TopicMail, TopicSMS, TopicEligibility, TopicReminder, TopicWaitAlert} {
		b := backlog[topic]
		w.Sample("teleclinic_outbox_backlog", float64(b[0]), "topic", topic)
		w.Sample("teleclinic_outbox_oldest_due_seconds", float64(b[1]), "topic", topic)
	}
	waiting, failed := a.store.AuditJournalStats()
	w.Help("teleclinic_audit_journal_waiting", "gauge", "Audit entries of reads in the journal, not yet in the audit table (SQLite).")
	w.Sample("teleclinic_audit_journal_waiting", float64(waiting))
	w.Help("teleclinic_audit_journal_failed_flushes_total", "counter", "Moves of journaled audit entries into the audit table that the database refused.")
	w.Sample("teleclinic_audit_journal_failed_flushes_total", float64(failed))
	w.Help("teleclinic_db_statements_total", "counter", "Database statements this process has run (the load tool divides it by requests).")
	w.Sample("teleclinic_db_statements_total", float64(a.store.Statements()))
	stats := a.store.PoolStats()
	pools := make([]string, 0, len(stats))
	for name := range stats {
		pools = append(pools, name)
	}
	slices.Sort(pools)
	w.Help("teleclinic_db_pool_wait_total", "counter", "Times a query waited for a free database connection.")
	for _, p := range pools {
		w.Sample("teleclinic_db_pool_wait_total", float64(stats[p].WaitCount), "pool", p)
	}
	w.Help("teleclinic_db_pool_wait_seconds_total", "counter", "Time spent waiting for a free database connection.")
	for _, p := range pools {
		w.Sample("teleclinic_db_pool_wait_seconds_total", stats[p].WaitDuration.Seconds(), "pool", p)
	}
	w.Help("teleclinic_db_pool_connections", "gauge", "Open database connections by pool and state.")
	for _, p := range pools {
		w.Sample("teleclinic_db_pool_connections", float64(stats[p].InUse), "pool", p, "state", "in_use")
		w.Sample("teleclinic_db_pool_connections", float64(stats[p].Idle), "pool", p, "state", "idle")
	}
}
