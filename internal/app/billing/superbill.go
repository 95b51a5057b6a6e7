package billing

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/text/language"

	"teleclinic/internal/app"
	"teleclinic/internal/claimrules"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Superbill is what a patient hands their insurer to claim a visit back:
// who gave it (clinic, provider with NPI), to whom, when and where (the
// place of service), the diagnoses and services with their modifiers, and
// what was charged and paid. The portal prints it and renders it as a PDF
// (internal/superbill); GET /visits/{id}/superbill answers the PDF.
type Superbill struct {
	Clinic      string
	Room        string
	Contact     *clinic.RoomContact
	Provider    *clinic.User
	ProviderNPI string
	Patient     *clinic.User
	Visit       *clinic.Visit
	// Date is the day of service, in the room's zone.
	Date string
	// PlaceOfService is "02" or "10" ("" when the patient did not say
	// where they were); Derived is the rule set's reading of the facts.
	PlaceOfService string
	Derived        claimrules.Result
	Facts          *clinic.VisitFacts
	// Interpreter names the interpreter who took part and their language
	// ("Spanish (Ana Ruiz)"; "": none).
	Interpreter string
	Diagnoses   []CodeLine
	Services    []ServiceLine
	// What was charged for the visit and its fees, in minor units of
	// Currency, and what was paid and refunded.
	Currency                                 string
	Charged, Discount, Paid, Refunded, Owing int64
	Issued                                   int64
}

// CodeLine is a diagnosis with its words.
type CodeLine struct{ Code, Text string }

// ServiceLine is a procedure with its words and modifiers.
type ServiceLine struct {
	Code, Text string
	Modifiers  []string
}

// POSWords are the places of service as the superbill names them.
var POSWords = map[string]string{
	"02": "02 — Telehealth provided other than in the patient's home",
	"10": "10 — Telehealth provided in the patient's home",
}

// Superbill is the superbill of completed visit visitID: for its patient,
// its provider and the clinic admin. Audited as visit.superbill.
func (s *Service) Superbill(ctx context.Context, p *clinic.Principal, visitID int64) (*Superbill, error) {
	if err := app.RequireUser(p); err != nil {
		return nil, err
	}
	out, err := s.superbill(ctx, p, visitID)
	return out, s.core.AuditOutcome(ctx, p, "visit.superbill", "visit", i64s(visitID), err)
}

func (s *Service) superbill(ctx context.Context, p *clinic.Principal, visitID int64) (*Superbill, error) {
	v, err := s.core.VisitFor(ctx, p, visitID)
	if err != nil {
		return nil, err
	}
	if v.MemberID != p.UserID() && !p.IsAdmin() && (v.ProviderID == 0 || v.ProviderID != p.UserID()) {
		return nil, clinic.Errorf(clinic.EForbidden, "Only the visit's patient, its provider or the clinic admin reads its superbill.")
	}
	if v.Status != clinic.VisitCompleted {
		return nil, clinic.Errorf(clinic.EConflict, "Visit %d is %s; a superbill is for a completed visit.", v.ID, app.StatusName(v.Status))
	}
	q := s.core.Read()
	users, err := q.UsersByIDs(ctx, p.Account.ID, []int64{v.MemberID, v.ProviderID})
	if err != nil {
		return nil, fmt.Errorf("superbill: %w", err)
	}
	b := &Superbill{Clinic: p.Account.Name, Patient: users[v.MemberID], Provider: users[v.ProviderID], Visit: v, Issued: s.core.Unix(), Currency: "USD"}
	b.ProviderNPI = app.ProviderNPI(b.Provider)
	zone := time.UTC
	if v.RoomID != 0 {
		r, err := q.RoomByID(ctx, p.Account.ID, v.RoomID)
		if err != nil {
			return nil, fmt.Errorf("superbill: %w", err)
		}
		b.Room, b.Contact, b.Currency = r.Name, r.Settings.Contact, app.RoomCurrency(r)
		if z, err := time.LoadLocation(r.Settings.Operation.Timezone); err == nil {
			zone = z
		}
	}
	b.Date = time.Unix(claimTime(v), 0).In(zone).Format("2006-01-02")
	if b.Facts, err = q.VisitFacts(ctx, p.Account.ID, v.ID); err != nil {
		return nil, fmt.Errorf("superbill: %w", err)
	}
	b.Derived = app.DeriveClaim(b.Facts)
	if c := b.Facts.Interpreter(); c != nil {
		b.Interpreter = app.LanguageName(c.Language, language.English) + " (" + c.Name + ")"
	}
	b.PlaceOfService = b.Derived.PlaceOfService
	raw, err := q.VisitClaimCodes(ctx, p.Account.ID, v.ID)
	if err != nil {
		return nil, fmt.Errorf("superbill: %w", err)
	}
	codes := parseClaimCodes(raw)
	ref := s.cfg.Reference
	for _, d := range codes.Diagnoses {
		b.Diagnoses = append(b.Diagnoses, CodeLine{Code: d, Text: ref.DiagnosisText(d)})
	}
	for _, pr := range codes.Procedures {
		b.Services = append(b.Services, ServiceLine{Code: pr.Code, Text: ref.ProcedureText(pr.Code), Modifiers: claimrules.Merge(pr.Modifiers, b.Derived.Modifiers)})
	}
	if err := s.superbillMoney(ctx, p, v, b); err != nil {
		return nil, err
	}
	return b, nil
}

// superbillMoney adds up what was charged and paid for visit v: its own
// invoice (by its intake) and any fee.
func (s *Service) superbillMoney(ctx context.Context, p *clinic.Principal, v *clinic.Visit, b *Superbill) error {
	f := store.InvoiceFilter{VisitID: v.ID, Limit: 10}
	if v.IntakeID != 0 {
		f = store.InvoiceFilter{IntakeID: v.IntakeID, Limit: 10}
	}
	invs, err := s.core.Read().Invoices(ctx, p.Account.ID, f)
	if err != nil {
		return fmt.Errorf("superbill: %w", err)
	}
	for _, inv := range invs {
		if inv.Status == InvoiceFailed {
			continue
		}
		b.Currency = inv.Currency
		b.Charged += inv.Amount
		b.Discount += inv.Discount
		if inv.Status != InvoicePending {
			b.Paid += inv.AmountDue
		}
		b.Refunded += inv.Refunded
	}
	b.Owing = b.Charged - b.Discount - b.Paid
	return nil
}
