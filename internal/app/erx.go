package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Prescription statuses.
const (
	RxCurrent      = "Current"
	RxDiscontinued = "Discontinued"
)

var pharmacyStrings = []string{"name", "code", "address", "address_more", "city", "country", "state", "zip", "phone", "fax", "type"}
var pharmacyNumbers = []string{"lat", "long", "distance"}

// PharmacyFieldNames are the pharmacy fields a request may carry (besides extra).
func PharmacyFieldNames() []string {
	return append(append([]string{}, pharmacyStrings...), pharmacyNumbers...)
}

// PharmacyInput is POST /users/{id}/erx/pharmacies.
type PharmacyInput struct {
	Fields    map[string]any
	Extra     json.RawMessage // the search result, kept as sent
	IsDefault bool
}

// Pharmacies is GET /users/{id}/erx/pharmacies.
func (a *App) Pharmacies(ctx context.Context, p *clinic.Principal, userID int64) ([]*clinic.Pharmacy, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.pharmacies(ctx, p, userID)
	return out, a.AuditOutcome(ctx, p, "pharmacy.list", "user", i64s(userID), err)
}

func (a *App) pharmacies(ctx context.Context, p *clinic.Principal, userID int64) ([]*clinic.Pharmacy, error) {
	u, err := a.recordOwner(ctx, p, userID, ownRecords, false)
	if err != nil {
		return nil, err
	}
	return a.store.Read().Pharmacies(ctx, p.Account.ID, u.ID)
}

// SavePharmacy is POST /users/{id}/erx/pharmacies: saved by its code (a
// second save of a code replaces it). At most one is the default.
func (a *App) SavePharmacy(ctx context.Context, p *clinic.Principal, userID int64, in PharmacyInput) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	err := a.savePharmacy(ctx, p, userID, in)
	return a.AuditOutcome(ctx, p, "pharmacy.save", "user", i64s(userID), err)
}

func (a *App) savePharmacy(ctx context.Context, p *clinic.Principal, userID int64, in PharmacyInput) error {
	u, err := a.recordOwner(ctx, p, userID, ownRecords, true)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	fields := map[string]any{}
	for _, k := range pharmacyStrings {
		v, ok := in.Fields[k]
		if !ok || v == nil {
			continue
		}
		s, isStr := textValue(v)
		if !isStr {
			return bad("%s must be text.", k)
		}
		if len(s) > 300 {
			return bad("%s is longer than 300 characters.", k)
		}
		fields[k] = s
	}
	for _, k := range pharmacyNumbers {
		v, ok := in.Fields[k]
		if !ok || v == nil || v == "" {
			continue
		}
		f, ok := jsonFloat(normNumber(v))
		if !ok {
			return bad("%s must be a number.", k)
		}
		fields[k] = f
	}
	if lat, ok := fields["lat"].(float64); ok && (lat < -90 || lat > 90) {
		return bad("lat must be from -90 to 90.")
	}
	if lon, ok := fields["long"].(float64); ok && (lon < -180 || lon > 180) {
		return bad("long must be from -180 to 180.")
	}
	name, _ := fields["name"].(string)
	code, _ := fields["code"].(string)
	if name == "" || code == "" {
		return bad("name and code are required.")
	}
	if len(in.Extra) > 64<<10 {
		return bad("extra is larger than 64 KiB.")
	}
	if len(in.Extra) > 0 && !json.Valid(in.Extra) {
		return bad("extra must be the search result as JSON.")
	}
	ph := &clinic.Pharmacy{UserID: u.ID, Code: code, Fields: fields, Extra: in.Extra, IsDefault: in.IsDefault, Created: a.Unix()}
	err = a.store.Tx(ctx, func(q *store.Q) error { return q.PutPharmacy(ctx, p.Account.ID, ph) })
	if errors.Is(err, store.ErrConflict) {
		return clinic.Errorf(clinic.EConflict, "Another default pharmacy was saved at the same time; try again.")
	}
	return err
}

// DeletePharmacy is DELETE /users/{id}/erx/pharmacies/{code}.
func (a *App) DeletePharmacy(ctx context.Context, p *clinic.Principal, userID int64, code string) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	err := a.deletePharmacy(ctx, p, userID, code)
	return a.AuditOutcome(ctx, p, "pharmacy.delete", "user", i64s(userID), err)
}

func (a *App) deletePharmacy(ctx context.Context, p *clinic.Principal, userID int64, code string) error {
	u, err := a.recordOwner(ctx, p, userID, ownRecords, true)
	if err != nil {
		return err
	}
	err = a.store.Write().DeletePharmacy(ctx, p.Account.ID, u.ID, code)
	if errors.Is(err, store.ErrNotFound) {
		return clinic.Errorf(clinic.ENotFound, "No pharmacy %q is saved.", code)
	}
	return err
}

// PrescriptionView is a prescription with its prescriber's name.
type PrescriptionView struct {
	*clinic.Prescription
	PrescriberName string
}

// RxQuery is GET /users/{id}/erx/prescriptions: a Status (Current by
// default, Discontinued, or All), and a page: Limit (MaxRxList unless
// fewer) older than the prescription Before (0: from the newest).
type RxQuery struct {
	Status string
	Before int64
	Limit  int
}

// MaxRxList is a page of a patient's prescriptions unless its limit asks
// fewer.
const MaxRxList = 1000

// rxPage is how many prescriptions a page asked for limit holds.
func rxPage(limit int) int { return PageSize(limit, MaxRxList, MaxRxList) }

// Prescriptions is GET /users/{id}/erx/prescriptions.
func (a *App) Prescriptions(ctx context.Context, p *clinic.Principal, userID int64, in RxQuery) (clinic.Page[*PrescriptionView], error) {
	if err := RequireUser(p); err != nil {
		return clinic.Page[*PrescriptionView]{}, err
	}
	out, err := a.prescriptions(ctx, p, userID, in)
	return out, a.AuditOutcome(ctx, p, "prescription.list", "user", i64s(userID), err)
}

func (a *App) prescriptions(ctx context.Context, p *clinic.Principal, userID int64, in RxQuery) (clinic.Page[*PrescriptionView], error) {
	var none clinic.Page[*PrescriptionView]
	u, err := a.recordOwner(ctx, p, userID, readRecords, false)
	if err != nil {
		return none, err
	}
	if in.Before < 0 {
		return none, clinic.Errorf(clinic.EInvalid, "before is the id of the last prescription of the page before.")
	}
	status := in.Status
	switch strings.ToLower(status) {
	case "", "current":
		status = RxCurrent
	case "discontinued":
		status = RxDiscontinued
	case "all":
		status = ""
	default:
		return none, clinic.Errorf(clinic.EInvalid, "status must be Current, Discontinued or All.")
	}
	size := rxPage(in.Limit)
	rxs, err := a.store.Read().Prescriptions(ctx, p.Account.ID, u.ID, store.RxFilter{Status: status, Before: in.Before, Limit: size + 1})
	if err != nil {
		return none, fmt.Errorf("prescriptions: %w", err)
	}
	pg := clinic.PageOf(rxs, size, func(rx *clinic.Prescription) int64 { return rx.ID })
	views, err := a.prescriptionViews(ctx, p, pg.Items)
	return clinic.Page[*PrescriptionView]{Items: views, Next: pg.Next}, err
}

// prescriptionViews are rxs with their prescribers' names, read in one
// statement however many prescriptions.
func (a *App) prescriptionViews(ctx context.Context, p *clinic.Principal, rxs []*clinic.Prescription) ([]*PrescriptionView, error) {
	ids := make([]int64, len(rxs))
	for i, rx := range rxs {
		ids[i] = rx.PrescriberID
	}
	prescribers, err := a.store.Read().UsersByIDs(ctx, p.Account.ID, ids)
	if err != nil {
		return nil, fmt.Errorf("prescribers: %w", err)
	}
	out := make([]*PrescriptionView, len(rxs))
	for i, rx := range rxs {
		out[i] = &PrescriptionView{Prescription: rx}
		if pr := prescribers[rx.PrescriberID]; pr != nil {
			out[i].PrescriberName = strings.TrimSpace(pr.FirstName + " " + pr.LastName)
		}
	}
	return out, nil
}

// PrescriptionInput is POST /users/{id}/erx/prescriptions (extension).
type PrescriptionInput struct {
	DrugID, NDC, Drug, Directions, PharmacyCode string
	Qty, Refills                                int64
	VisitID                                     int64
}

var ndcRE = regexp.MustCompile(`^(?:[0-9]{4}-[0-9]{4}-[0-9]{2}|[0-9]{5}-[0-9]{3}-[0-9]{2}|[0-9]{5}-[0-9]{4}-[0-9]{1,2}|[0-9]{10,11})$`)

// requirePrescriber: only a provider with a visit with the patient writes
// and discontinues prescriptions; the admin manages records, not drugs.
func (a *App) requirePrescriber(ctx context.Context, p *clinic.Principal, userID int64) (*clinic.User, error) {
	if p.User == nil || p.User.Type != clinic.UserProvider || p.IsAdmin() {
		return nil, clinic.Errorf(clinic.EForbidden, "Only a provider who has a visit with the patient may prescribe.")
	}
	return a.recordOwner(ctx, p, userID, writeRecords, true)
}

// Prescribe writes a prescription.
func (a *App) Prescribe(ctx context.Context, p *clinic.Principal, userID int64, in PrescriptionInput) (*PrescriptionView, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	out, err := a.prescribe(ctx, p, userID, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "prescription.create", "user", i64s(userID), err)
	}
	return out, nil
}

func (a *App) prescribe(ctx context.Context, p *clinic.Principal, userID int64, in PrescriptionInput) (*PrescriptionView, error) {
	u, err := a.requirePrescriber(ctx, p, userID)
	if err != nil {
		return nil, err
	}
	in.Drug, in.Directions = strings.TrimSpace(in.Drug), strings.TrimSpace(in.Directions)
	if err := in.check(); err != nil {
		return nil, err
	}
	if err := a.checkRxRefs(ctx, p, u, in); err != nil {
		return nil, err
	}
	now := a.Unix()
	rx := &clinic.Prescription{UserID: u.ID, PrescriberID: p.UserID(), VisitID: in.VisitID, DrugID: in.DrugID, NDC: in.NDC, Drug: in.Drug,
		Directions: in.Directions, Qty: int(in.Qty), Refills: int(in.Refills), PharmacyCode: in.PharmacyCode, Status: RxCurrent, Created: now, Modified: now}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreatePrescription(ctx, p.Account.ID, rx); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "prescription.create", "prescription", i64s(rx.ID), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("prescribe: %w", err)
	}
	return &PrescriptionView{Prescription: rx, PrescriberName: strings.TrimSpace(p.User.FirstName + " " + p.User.LastName)}, nil
}

// check is the prescription's own fields in bounds.
func (in PrescriptionInput) check() error {
	bad := func(format string, args ...any) error { return clinic.Errorf(clinic.EInvalid, format, args...) }
	switch {
	case in.Drug == "" || len(in.Drug) > 300:
		return bad("drug is required (at most 300 characters).")
	case in.Directions == "" || len(in.Directions) > 1000:
		return bad("directions are required (at most 1000 characters).")
	case in.Qty < 1 || in.Qty > 10000:
		return bad("qty must be a whole number from 1 to 10000.")
	case in.Refills < 0 || in.Refills > 11:
		return bad("refills must be from 0 to 11.")
	case in.NDC != "" && !ndcRE.MatchString(in.NDC):
		return bad("ndc must be a National Drug Code: 10 or 11 digits, with or without its dashes.")
	case len(in.DrugID) > 64:
		return bad("drug_id is at most 64 characters.")
	}
	return nil
}

// checkRxRefs checks what a prescription for patient u refers to: the
// visit, the prescriber's with the patient, and the pharmacy, one of the
// patient's.
func (a *App) checkRxRefs(ctx context.Context, p *clinic.Principal, u *clinic.User, in PrescriptionInput) error {
	if in.VisitID != 0 {
		v, err := a.store.Read().VisitByID(ctx, p.Account.ID, in.VisitID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && (v.MemberID != u.ID || v.ProviderID != p.UserID())) {
			return clinic.Errorf(clinic.EInvalid, "visit_id must be your visit with this patient.")
		}
		if err != nil {
			return err
		}
	}
	if in.PharmacyCode == "" {
		return nil
	}
	phs, err := a.store.Read().Pharmacies(ctx, p.Account.ID, u.ID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(phs, func(ph *clinic.Pharmacy) bool { return ph.Code == in.PharmacyCode }) {
		return clinic.Errorf(clinic.EInvalid, "pharmacy_code must be one of the patient's saved pharmacies.")
	}
	return nil
}

// Discontinue ends a current prescription.
func (a *App) Discontinue(ctx context.Context, p *clinic.Principal, userID, rxID int64) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	err := a.discontinue(ctx, p, userID, rxID)
	return a.AuditOutcome(ctx, p, "prescription.discontinue", "prescription", i64s(rxID), err)
}

func (a *App) discontinue(ctx context.Context, p *clinic.Principal, userID, rxID int64) error {
	u, err := a.requirePrescriber(ctx, p, userID)
	if err != nil {
		return err
	}
	id := rxID
	ok, err := a.store.Write().SetPrescriptionStatus(ctx, p.Account.ID, u.ID, id, RxCurrent, RxDiscontinued, a.Unix())
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	rx, err := a.store.Read().Prescription(ctx, p.Account.ID, u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return clinic.Errorf(clinic.ENotFound, "Prescription not found.")
	}
	if err != nil {
		return err
	}
	return clinic.Errorf(clinic.EConflict, "Prescription %d is already %s.", id, strings.ToLower(rx.Status))
}
