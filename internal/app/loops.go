package app

import (
	"context"
	"sync"
	"time"
)

// The background loops, in one table (Run): what this process does on
// its own, beside answering requests. Seven deliver the outbox (mail,
// push, webhooks, eligibility checks, exports, texts, reminders due); six
// are not outbox work: the audit trail's chainer, the checkpoint writer,
// the sweep of expired call signals, the look for a new ICD-10-CM release,
// the sweep that tells rooms who has left their waiting room and the one
// that makes no-shows. Families add theirs (billing's fee charges).

// Run delivers the outbox until ctx ends: mail, push notifications,
// webhooks and eligibility checks, each in its own loop so a slow receiver
// delays no other kind; beside them it chains pending audit entries.
// A loop wakes when this process commits a new item, every OutboxPoll for
// items written by other processes or due for a retry, and at once again
// after a full batch. Several processes may run it on one database: each
// claim goes to exactly one of them.
//
// more are the families' passes (billing's fees), run every OutboxPoll
// beside app's own.
func (a *App) Run(ctx context.Context, more ...func(context.Context) int) {
	var wg sync.WaitGroup
	poll := a.cfg.OutboxPoll
	type loop struct {
		kick  <-chan struct{}
		pass  func(context.Context) int
		every time.Duration
	}
	loops := []loop{
		{nil, func(ctx context.Context) int { n, _ := a.mailPass(ctx, a.cfg.Mail); return n }, poll}, // outbox.go
		{a.pushKick, a.DeliverPush, poll},               // outbox.go
		{a.webhookKick, a.DeliverWebhooks, poll},        // webhooks.go
		{a.eligibilityKick, a.DeliverEligibility, poll}, // insurance.go
		{a.exportKick, a.DeliverExports, poll},          // export.go
		{a.smsKick, a.DeliverTexts, poll},               // sms.go
		{nil, a.DeliverReminders, poll},                 // appointments.go
		{nil, a.ChainAudits, a.cfg.AuditChainEvery},     // audit.go: not outbox work
		{nil, a.checkpointPass, poll},                   // audit.go: not outbox work
		{nil, a.SweepCallSignals, poll},                 // loops.go: not outbox work
		{nil, a.RefreshDiagnoses, DiagnosisPoll},        // codes.go: not outbox work
		{nil, a.leftSweep(), poll},                      // presence.go: not outbox work
		{nil, a.NoShowSweep, poll},                      // noshows.go: not outbox work
	}
	for _, pass := range more {
		loops = append(loops, loop{nil, pass, poll})
	}
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.loop(ctx, l.kick, l.pass, l.every)
		}()
	}
	wg.Wait()
}

func (a *App) loop(ctx context.Context, kick <-chan struct{}, pass func(context.Context) int, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if pass(ctx) >= batchSize {
			continue // there may be more due right now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}

// kick wakes a delivery loop of this process without blocking: one pending
// wake-up is enough, since a pass takes everything that is due.
func kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (a *App) kickWebhooks() { kick(a.webhookKick) }
func (a *App) kickPush()     { kick(a.pushKick) }

// CallSignalTTL is how long a call's signals are kept (app/calls): they
// matter for seconds; a page that reconnects reads what it missed within
// minutes.
const CallSignalTTL = 10 * time.Minute

// SweepCallSignals deletes the signals older than CallSignalTTL of every
// clinic, at most once a minute (the outbox loop calls it each poll).
func (a *App) SweepCallSignals(ctx context.Context) int {
	now := a.Unix()
	if last := a.lastSignalSweep.Load(); now-last < 60 || !a.lastSignalSweep.CompareAndSwap(last, now) {
		return 0
	}
	if _, err := a.store.Write().SweepCallSignals(ctx, now-int64(CallSignalTTL/time.Second)); err != nil && ctx.Err() == nil {
		a.log.Error("call signals: sweep", "err", err)
	}
	return 0 // never a full batch: the loop waits for its next poll
}
