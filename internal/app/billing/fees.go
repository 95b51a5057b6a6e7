package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// The fees of a room's policy (app/noshows.go): a no-show's and a late
// cancellation's, each written to the outbox as the visit moved and
// charged here, off-session, to the patient's saved card for the room.
// Each is an invoice of its own kind beside the visit's: a unique index
// keeps one fee of a kind per visit, and the charge's idempotency key is
// the invoice's, so a retried item charges once. A patient with no saved
// card gets a failed fee invoice the admin sees ("no_saved_card").

// feeWords are the fee invoices' descriptions, as the card statement and
// the invoice list show them.
var feeWords = map[string]string{clinic.InvoiceNoShowFee: "No-show fee", clinic.InvoiceLateCancelFee: "Late cancellation fee"}

// ChargeFees is the loop pass that charges the fees due; it answers how
// many items it claimed.
func (s *Service) ChargeFees(ctx context.Context) int {
	return s.core.DeliverTopic(ctx, app.TopicFee, s.chargeFee)
}

func (s *Service) chargeFee(ctx context.Context, it store.OutboxItem) error {
	var f app.FeeItem
	if err := json.Unmarshal([]byte(it.Payload), &f); err != nil || feeWords[f.Kind] == "" {
		return app.SkipError("unreadable fee")
	}
	acct, err := s.core.AccountByID(ctx, it.AccountID)
	if err != nil {
		return err
	}
	p := &clinic.Principal{Account: acct, Kind: clinic.CredSystem, RequestID: "fee"}
	q := s.core.Read()
	inv, err := q.FeeInvoice(ctx, acct.ID, f.Visit, f.Kind)
	if errors.Is(err, store.ErrNotFound) {
		inv, err = s.createFee(ctx, p, f)
	}
	if err != nil {
		return err
	}
	if inv.Status != InvoicePending {
		return nil // charged, or refused for want of a card
	}
	_, err = s.charge(ctx, p, inv, false)
	var ce *clinic.Error
	if errors.As(err, &ce) && ce.Code != clinic.EUnavailable && ce.Code != clinic.EConflict {
		// The card was declined: the failed invoice says so.
		return app.SkipError(ce.Message)
	}
	return err
}

// createFee writes fee f's invoice, pending on the patient's saved card
// for the visit's room (failed when they have none). A concurrent pass
// that wrote it first leaves this one that invoice.
func (s *Service) createFee(ctx context.Context, p *clinic.Principal, f app.FeeItem) (*clinic.Invoice, error) {
	q := s.core.Read()
	v, err := q.VisitByID(ctx, p.Account.ID, f.Visit)
	if err != nil {
		return nil, fmt.Errorf("fee visit: %w", err)
	}
	proc, err := s.processor(ctx, p.Account.ID)
	if err != nil {
		return nil, err
	}
	cons, _ := json.Marshal(clinic.Consultation{ID: f.Kind, Description: feeWords[f.Kind], Charge: true})
	now := s.core.Unix()
	inv := &clinic.Invoice{Kind: f.Kind, IntakeID: v.IntakeID, MemberID: v.MemberID, VisitID: v.ID, RoomID: v.RoomID, Processor: proc.Name(),
		Consultation: cons, Currency: f.Currency, Amount: f.Amount, AmountDue: f.Amount, Status: InvoicePending, Created: now, Modified: now}
	src, err := s.chargeSource(ctx, p, &clinic.Intake{ID: v.IntakeID, MemberID: v.MemberID, RoomID: v.RoomID, ProviderID: v.ProviderID}, proc.Name(), 0)
	var ce *clinic.Error
	switch {
	case err == nil:
		inv.SourceID = src.ID
	case errors.As(err, &ce) && ce.Code == clinic.EInvalid:
		inv.Status, inv.FailureCode, inv.FailureMessage = InvoiceFailed, "no_saved_card", "The patient has no card saved for this room."
	default:
		return nil, err
	}
	err = s.core.Tx(ctx, func(q *store.Q) error {
		err := q.CreateFeeInvoice(ctx, p.Account.ID, inv)
		if errors.Is(err, store.ErrConflict) {
			existing, err := q.FeeInvoice(ctx, p.Account.ID, v.ID, f.Kind)
			if err != nil {
				return err
			}
			*inv = *existing
			return nil
		}
		if err != nil {
			return err
		}
		return s.core.AuditIn(ctx, q, p, "invoice.create", "invoice", i64s(inv.ID), app.OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("fee invoice: %w", err)
	}
	return inv, nil
}
