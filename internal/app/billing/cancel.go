package billing

import (
	"context"
	"fmt"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
	"teleclinic/internal/store"
)

// Cancelled is a cancelled visit and what its payment became: the invoice
// refunded (in whole or in part), nil when nothing was paid, and RefundErr
// when the refund the policy gives did not go through (the cancellation
// stands; the admin refunds from /admin).
type Cancelled struct {
	Detail    *app.VisitDetail
	Invoice   *clinic.Invoice
	RefundErr error
}

// CancelVisit cancels a visit (app.MoveVisit decides who may, and until
// when a patient may) and refunds what was paid for it: all of it when the
// clinic cancels, the room's refund_percent when the patient does. No
// money is kept for a visit that will not happen unless the clinic's
// policy says so.
func (s *Service) CancelVisit(ctx context.Context, p *clinic.Principal, id int64, in app.MoveInput) (*Cancelled, error) {
	d, err := s.core.MoveVisit(ctx, p, id, app.ActCancel, in)
	if err != nil {
		return nil, err
	}
	out := &Cancelled{Detail: d}
	v := d.Visit
	if v.IntakeID == 0 {
		return out, nil
	}
	invs, err := s.core.Read().Invoices(ctx, p.Account.ID, store.InvoiceFilter{IntakeID: v.IntakeID, Limit: 10})
	if err != nil {
		out.RefundErr = err // cancelled all the same; the admin sees the invoice unrefunded
		return out, nil
	}
	percent := 100
	if v.MemberID == p.UserID() && d.Room != nil {
		percent = d.Room.Settings.AppointmentRules().RefundPercent
	}
	for _, inv := range invs {
		if inv.Kind != clinic.InvoiceVisit || inv.Status != InvoicePaid || inv.ChargeRef == "" || percent <= 0 {
			continue
		}
		amount := inv.AmountDue * int64(min(percent, 100)) / 100
		if amount <= 0 {
			continue
		}
		major := strconv.FormatFloat(payments.ToMajor(amount, inv.Currency), 'f', payments.Exponent(inv.Currency), 64)
		out.Invoice, out.RefundErr = s.refund(ctx, p, inv, major)
		if out.RefundErr != nil {
			s.log.Warn("cancel: the policy's refund did not go through", "account", p.Account.Code, "invoice", inv.ID, "err", out.RefundErr)
			out.Invoice = inv
		}
	}
	return out, nil
}

// RefundUnbooked refunds what was paid for an intake that has no visit: a
// patient who paid for a held time that could not then be booked gets all
// of it back at once. An intake with a visit is refunded by cancelling it.
func (s *Service) RefundUnbooked(ctx context.Context, p *clinic.Principal, intakeID int64) (*clinic.Invoice, error) {
	it, err := s.billableIntake(ctx, p, intakeID)
	if err != nil {
		return nil, err
	}
	if it.VisitID != 0 {
		return nil, clinic.Errorf(clinic.EConflict, "Intake %d has a visit; cancel the visit to be refunded.", it.ID)
	}
	invs, err := s.core.Read().Invoices(ctx, p.Account.ID, store.InvoiceFilter{IntakeID: it.ID, Limit: 10})
	if err != nil {
		return nil, fmt.Errorf("invoices: %w", err)
	}
	for _, inv := range invs {
		if inv.Kind == clinic.InvoiceVisit && inv.Status == InvoicePaid && inv.ChargeRef != "" {
			return s.refund(ctx, p, inv, "")
		}
	}
	return nil, clinic.Errorf(clinic.EConflict, "Nothing was paid for intake %d.", it.ID)
}

// Refunded is an admin's refund and what became of the visit it paid
// for: Visit is nil when it paid for none (or none is left), Cancelled
// says the refund cancelled it.
type Refunded struct {
	Invoice   *clinic.Invoice
	Visit     *clinic.Visit
	Cancelled bool
}

// RefundAndDecide is the admin's refund from the portal: amount (all of
// it when "") of paid invoice id back to the card, and the visit it paid
// for cancelled when cancel is set and it is still open (its patient is
// emailed, as for any cancellation), or left booked otherwise. The refund
// comes first: a visit is never cancelled for a refund the processor
// refused.
func (s *Service) RefundAndDecide(ctx context.Context, p *clinic.Principal, id int64, amount string, cancel bool) (*Refunded, error) {
	inv, err := s.RefundInvoice(ctx, p, id, amount)
	if err != nil {
		return nil, err
	}
	out := &Refunded{Invoice: inv}
	if inv.IntakeID == 0 {
		return out, nil
	}
	it, err := s.core.Read().IntakeByID(ctx, p.Account.ID, inv.IntakeID)
	if err != nil || it.VisitID == 0 {
		return out, nil // refunded; it paid for no visit
	}
	if out.Visit, err = s.core.VisitFor(ctx, p, it.VisitID); err != nil {
		return out, nil
	}
	if !cancel || app.VisitOver(out.Visit) {
		return out, nil
	}
	d, err := s.core.MoveVisit(ctx, p, it.VisitID, app.ActCancel, app.MoveInput{Reason: "Cancelled by the clinic, with a refund"})
	if err != nil {
		return out, fmt.Errorf("refunded, but the visit could not be cancelled: %w", err)
	}
	out.Visit, out.Cancelled = d.Visit, true
	return out, nil
}
