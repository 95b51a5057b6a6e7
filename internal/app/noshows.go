package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
	"teleclinic/internal/store"
)

// No-shows and late cancellations. A booked visit that no one started,
// whose patient has not arrived (presence.go: their page, or a client
// following the visit's events, never opened within the hour before its
// start), becomes a no-show the room's NoShowMinutes after its start; a
// provider or the admin also marks one (reason "no-show"). A patient who
// cancels inside the room's CancelHours window, where its policy has a
// late-cancel fee, cancels late; the clinic also records one (reason
// "late-cancel"). Both stay status 40 with their Outcome, so the spec's
// clients see a cancellation; the outcome is the API's field, FHIR's
// noshow, its own event and what the dashboard counts. The room's fee,
// when it has one, is written to the outbox in the move's transaction and
// charged off-session to the patient's saved card (billing.ChargeFees);
// the patient's mail and text say so.

// ReasonLateCancel is the cancel reason staff give a cancellation made
// too late (by phone, say) that counts as one.
const ReasonLateCancel = "late-cancel"

// TopicFee is the outbox topic of the fees to charge.
const TopicFee = "fee"

// noShowWindow bounds how far back the sweep looks: a booked visit not
// started a day after its start is left as it is (the most a room waits,
// maxNoShowMinutes, is well inside it).
const noShowWindow = 24 * 3600

// maxNoShowMinutes is the longest wait a room may set.
const maxNoShowMinutes = 240

// FeeItem is a fee to charge: the visit, which fee, and its amount as the
// policy priced it when the visit was missed or cancelled.
type FeeItem struct {
	Visit    int64  `json:"visit"`
	Kind     string `json:"kind"` // clinic.InvoiceNoShowFee or InvoiceLateCancelFee
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// feeOf is the fee room r charges for outcome: its kind, amount in minor
// units and currency; a zero amount when it charges none.
func feeOf(r *clinic.Room, outcome string) (kind string, amount int64, currency string) {
	rules := r.Settings.AppointmentRules()
	major := 0.0
	switch outcome {
	case clinic.OutcomeNoShow:
		kind, major = clinic.InvoiceNoShowFee, rules.NoShowFee
	case clinic.OutcomeLateCancel:
		kind, major = clinic.InvoiceLateCancelFee, rules.LateCancelFee
	default:
		return "", 0, ""
	}
	currency = RoomCurrency(r)
	amount, ok := payments.ToMinor(major, currency)
	if !ok || amount < 0 {
		return kind, 0, currency
	}
	return kind, amount, currency
}

// RoomCurrency is the currency room r charges in (USD unless set).
func RoomCurrency(r *clinic.Room) string {
	if c := r.Settings.Currency; c != "" {
		return c
	}
	return "USD"
}

// FeeWords is a fee as a person reads it: "25.00 USD".
func FeeWords(amount int64, currency string) string {
	return strconv.FormatFloat(payments.ToMajor(amount, currency), 'f', payments.Exponent(currency), 64) + " " + currency
}

// LateCancelFee is what patient-cancelling appointment v of room r now
// would cost: 0 while the room's window is open or it charges no fee.
func (a *App) LateCancelFee(v *clinic.Visit, r *clinic.Room) (int64, string) {
	if v.Kind != clinic.KindAppointment || a.Unix() <= ChangeCloses(v, r) {
		return 0, ""
	}
	_, amount, currency := feeOf(r, clinic.OutcomeLateCancel)
	return amount, currency
}

// patientCancel decides a patient's cancellation of their visit v: in the
// room's window, a plain one; after it, a late one where the room charges
// a late-cancel fee, otherwise refused (patientChange).
func (a *App) patientCancel(ctx context.Context, p *clinic.Principal, v *clinic.Visit, m *store.VisitMove) error {
	err := a.patientChange(ctx, p, v)
	if err == nil || v.Kind != clinic.KindAppointment || v.RoomID == 0 {
		return err
	}
	r, rerr := a.store.Read().RoomByID(ctx, p.Account.ID, v.RoomID)
	if rerr != nil {
		return fmt.Errorf("appointment room: %w", rerr)
	}
	if fee, _ := a.LateCancelFee(v, r); fee > 0 {
		m.Outcome = clinic.OutcomeLateCancel
		return nil
	}
	return err
}

// enqueueFee writes the fee the room of appointment v charges for
// outcome, if any, to the outbox in transaction q.
func (a *App) enqueueFee(ctx context.Context, q *store.Q, v *clinic.Visit, outcome string) error {
	if outcome == "" || v.RoomID == 0 {
		return nil
	}
	r, err := q.RoomByID(ctx, v.AccountID, v.RoomID)
	if err != nil {
		return err
	}
	kind, amount, currency := feeOf(r, outcome)
	if amount <= 0 {
		return nil
	}
	b, _ := json.Marshal(FeeItem{Visit: v.ID, Kind: kind, Amount: amount, Currency: currency})
	now := a.Unix()
	return q.Enqueue(ctx, &store.OutboxItem{AccountID: v.AccountID, Topic: TopicFee, Payload: string(b), Created: now, Due: now})
}

// NoShowSweep is the loop pass that makes no-shows of the booked visits
// whose room's wait has passed with no one started and no patient
// arrived. Each is moved by a conditional UPDATE, so of two processes
// sweeping (or a provider starting it at that moment) one wins.
func (a *App) NoShowSweep(ctx context.Context) int {
	now := a.Unix()
	rooms := map[int64]*clinic.Room{}
	n := 0
	// Rooms without a no-show wait keep their overdue visits as they
	// are: the pass reads on past them, a page at a time.
	var afterStart, afterID int64 = now - noShowWindow - 1, 0
	for {
		vs, err := a.store.Read().OverdueAppointments(ctx, now-noShowWindow, now-60, afterStart, afterID, batchSize)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("no-show sweep", "err", err)
			}
			return n
		}
		for _, v := range vs {
			afterStart, afterID = v.Start, v.ID
			r, ok := rooms[v.RoomID]
			if !ok {
				if r, err = a.store.Read().RoomByID(ctx, v.AccountID, v.RoomID); err != nil {
					a.log.Warn("no-show sweep: room", "visit", v.ID, "err", err)
					continue
				}
				rooms[v.RoomID] = r
			}
			mins := r.Settings.AppointmentRules().NoShowMinutes
			if mins <= 0 || now < v.Start+int64(mins)*60 || Arrived(v) {
				continue
			}
			if err := a.markNoShow(ctx, v); err != nil {
				a.log.Warn("no-show sweep: mark", "visit", v.ID, "err", err)
				continue
			}
			n++
		}
		if len(vs) < batchSize {
			// The pass says how many it moved (less than a batch: the
			// loop waits for its next tick).
			return min(n, batchSize-1)
		}
	}
}

// Arrived says whether the patient of booked visit v has come: their page
// followed it within the hour before its start, or later.
func Arrived(v *clinic.Visit) bool {
	return v.Kind == clinic.KindAppointment && v.SeenAt != 0 && v.SeenAt >= v.Start-3600
}

// markNoShow moves booked visit v to a no-show as the clinic.
func (a *App) markNoShow(ctx context.Context, v *clinic.Visit) error {
	acct, err := a.accountByID(ctx, v.AccountID)
	if err != nil {
		return err
	}
	p := &clinic.Principal{Account: acct, Kind: clinic.CredSystem, RequestID: "no-show-sweep"}
	m := store.VisitMove{AccountID: v.AccountID, ID: v.ID, From: []int{clinic.VisitPending, clinic.VisitConfirmed}, To: clinic.VisitCancelled,
		Reason: ReasonNoShow, Outcome: clinic.OutcomeNoShow, Now: a.Unix()}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		_, err := a.applyMove(ctx, q, p, v, ActCancel, m)
		return err
	})
	if err != nil {
		return err
	}
	a.kickPush()
	return nil
}
