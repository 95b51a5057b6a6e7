package app

import (
	"context"
	"encoding/json"
	"time"

	"teleclinic/internal/mail"
)

// Mail delivery schedule.
const (
	mailLease       = 60 // seconds a worker holds a claimed message
	mailMaxAttempts = 8
)

// RunMail delivers outbox mail until ctx ends: it claims due messages, sends
// them, and reschedules failures with a growing delay. Several workers, in
// one process or several, never send the same claim twice.
func (a *App) RunMail(ctx context.Context, s mail.Sender, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		a.DeliverMail(ctx, s)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeliverMail makes one delivery pass and returns how many messages it sent.
func (a *App) DeliverMail(ctx context.Context, s mail.Sender) int {
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicMail}, a.unix(), mailLease, 20)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("mail: claim", "err", err)
		}
		return 0
	}
	sent := 0
	for _, it := range items {
		var m mailMessage
		raw, err := a.unseal(it.Payload)
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil {
			// Sealed with another server key: no retry can read it.
			a.log.Error("mail: unreadable outbox item; check that every process has the same server key", "id", it.ID)
			_ = a.store.Write().FinishOutbox(ctx, it.ID, a.unix(), "unreadable: server key mismatch")
			continue
		}
		sendCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = s.Send(sendCtx, mail.Message{To: m.To, Subject: m.Subject, Body: m.Body})
		cancel()
		now := a.unix()
		switch {
		case err == nil:
			sent++
			err = a.store.Write().FinishOutbox(ctx, it.ID, now, "")
		case it.Attempts >= mailMaxAttempts:
			a.log.Error("mail: giving up", "id", it.ID, "attempts", it.Attempts, "err", err)
			err = a.store.Write().FinishOutbox(ctx, it.ID, now, err.Error())
		default:
			delay := int64(30) << min(it.Attempts, 8)
			err = a.store.Write().RetryOutbox(ctx, it.ID, now+delay, err.Error())
		}
		if err != nil {
			a.log.Error("mail: update outbox", "id", it.ID, "err", err)
		}
	}
	return sent
}
