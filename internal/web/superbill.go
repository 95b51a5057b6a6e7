package web

import (
	"net/http"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/superbill"
)

// superbillPage is the printable superbill of a completed visit.
type superbillPage struct {
	Visit                             struct{ ID int64 }
	Clinic, Room, Issued              string
	Contact                           *clinic.RoomContact
	ProviderName, NPI, ProviderState  string
	PatientName, DOB, Address         string
	Date, POS, Modality, PatientState string
	Interpreter                       string
	Diagnoses                         []billing.CodeLine
	Pointers                          []string
	Services                          []superbillLine
	Charged, Discount, Paid, Refunded string
	Balance, RuleSet                  string
}

type superbillLine struct{ Code, Modifiers, Text string }

// superbillHTML is GET /visits/start/{id}/superbill: the page to read
// and print, with the PDF's link.
func (s *Server) superbillHTML(w http.ResponseWriter, r *http.Request) error {
	b, err := s.superbillOf(r)
	if err != nil {
		return err
	}
	money := func(n int64) string { return app.FeeWords(n, b.Currency) }
	optMoney := func(n int64) string {
		if n == 0 {
			return ""
		}
		return money(n)
	}
	pg := superbillPage{Clinic: b.Clinic, Room: b.Room, Issued: time.Unix(b.Issued, 0).UTC().Format("2006-01-02"), NPI: b.ProviderNPI,
		ProviderState: b.Facts.ProviderState, Date: b.Date, POS: billing.POSWords[b.PlaceOfService], PatientState: b.Facts.PatientState, Interpreter: b.Interpreter,
		Modality:  map[string]string{"video": "Real-time audio and video", "audio": "Audio only"}[b.Facts.Modality],
		Diagnoses: b.Diagnoses, Charged: money(b.Charged), Discount: optMoney(b.Discount), Paid: money(b.Paid), Refunded: optMoney(b.Refunded),
		Balance: money(b.Owing), RuleSet: b.Derived.RuleSet}
	pg.Visit.ID = b.Visit.ID
	pg.Contact = b.Contact
	if u := b.Provider; u != nil {
		pg.ProviderName = u.FullName()
	}
	if u := b.Patient; u != nil {
		pg.PatientName, pg.DOB = u.FullName(), u.DOB
		pg.Address = strings.Trim(strings.Join([]string{u.StreetAddr, u.City, u.State, u.Zip}, ", "), ", ")
	}
	for i := range b.Diagnoses {
		pg.Pointers = append(pg.Pointers, string(rune('A'+i)))
	}
	for _, l := range b.Services {
		pg.Services = append(pg.Services, superbillLine{Code: l.Code, Modifiers: strings.Join(l.Modifiers, " "), Text: l.Text})
	}
	s.render(w, r, http.StatusOK, "superbill", pg)
	return nil
}

// superbillFile is GET /visits/start/{id}/superbill.pdf.
func (s *Server) superbillFile(w http.ResponseWriter, r *http.Request) error {
	b, err := s.superbillOf(r)
	if err != nil {
		return err
	}
	return superbill.Serve(w, b)
}

func (s *Server) superbillOf(r *http.Request) (*billing.Superbill, error) {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return nil, err
	}
	return s.billing.Superbill(r.Context(), p, id)
}
