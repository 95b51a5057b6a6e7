// Package superbill renders a visit's superbill (billing.Superbill) as a
// PDF, with go-pdf/fpdf: one A4-or-Letter page a patient prints or sends
// to their insurer. The portal's printable page shows the same lines.
package superbill

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-pdf/fpdf"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
)

// PDF writes b as a PDF to w.
func PDF(w io.Writer, b *billing.Superbill) error {
	pdf := fpdf.New("P", "mm", "Letter", "")
	pdf.SetTitle("Superbill "+b.Date, true)
	pdf.SetAuthor(b.Clinic, true)
	pdf.SetCreator("Teleclinic", true)
	// The core fonts speak Windows-1252: names with accents are
	// translated to it (a character it lacks prints as "?").
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	pdf.AddPage()
	pdf.SetMargins(18, 18, 18)

	pdf.SetFont("Helvetica", "B", 18)
	pdf.CellFormat(0, 10, tr("Superbill"), "", 1, "L", false, 0, "")
	pdf.SetFont("Helvetica", "", 10)
	pdf.CellFormat(0, 5, tr(fmt.Sprintf("%s · visit %d · issued %s", b.Clinic, b.Visit.ID, time.Unix(b.Issued, 0).UTC().Format("2006-01-02"))), "", 1, "L", false, 0, "")
	pdf.Ln(4)

	section := func(title string) {
		pdf.Ln(2)
		pdf.SetFont("Helvetica", "B", 12)
		pdf.CellFormat(0, 7, tr(title), "B", 1, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 10)
		pdf.Ln(1)
	}
	field := func(label, value string) {
		if value == "" {
			value = "—"
		}
		pdf.SetFont("Helvetica", "B", 10)
		pdf.CellFormat(48, 6, tr(label), "", 0, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 10)
		pdf.MultiCell(0, 6, tr(value), "", "L", false)
	}

	section("Provider")
	field("Practice", strings.TrimSpace(b.Clinic+" — "+b.Room))
	if c := b.Contact; c != nil {
		field("Contact", strings.Trim(c.Phone+" · "+c.Email, " ·"))
	}
	if u := b.Provider; u != nil {
		field("Rendering provider", u.FullName())
		field("NPI", b.ProviderNPI)
		field("Provider's state", b.Facts.ProviderState)
	}
	section("Patient")
	if u := b.Patient; u != nil {
		field("Name", u.FullName())
		field("Date of birth", u.DOB)
		field("Address", strings.Trim(strings.Join([]string{u.StreetAddr, u.City, u.State, u.Zip}, ", "), ", "))
	}
	section("Service")
	field("Date of service", b.Date)
	field("Place of service", billing.POSWords[b.PlaceOfService])
	field("Modality", map[string]string{"video": "Real-time audio and video", "audio": "Audio only"}[b.Facts.Modality])
	if b.Facts.PatientState != "" {
		field("Patient's location", b.Facts.PatientState)
	}
	if b.Interpreter != "" {
		field("Interpreter", b.Interpreter)
	}

	section("Diagnoses (ICD-10-CM)")
	if len(b.Diagnoses) == 0 {
		pdf.CellFormat(0, 6, tr("None coded."), "", 1, "L", false, 0, "")
	}
	for i, d := range b.Diagnoses {
		pdf.SetFont("Helvetica", "B", 10)
		pdf.CellFormat(10, 6, string(rune('A'+i)), "", 0, "L", false, 0, "")
		pdf.CellFormat(24, 6, d.Code, "", 0, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 10)
		pdf.MultiCell(0, 6, tr(d.Text), "", "L", false)
	}

	section("Services (CPT/HCPCS)")
	if len(b.Services) == 0 {
		pdf.CellFormat(0, 6, tr("None coded."), "", 1, "L", false, 0, "")
	}
	for _, s := range b.Services {
		pdf.SetFont("Helvetica", "B", 10)
		pdf.CellFormat(24, 6, s.Code, "", 0, "L", false, 0, "")
		pdf.CellFormat(30, 6, strings.Join(s.Modifiers, " "), "", 0, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 10)
		pdf.MultiCell(0, 6, tr(s.Text), "", "L", false)
	}

	section("Charges and payments")
	money := func(n int64) string { return app.FeeWords(n, b.Currency) }
	field("Charged", money(b.Charged))
	if b.Discount > 0 {
		field("Discount", money(b.Discount))
	}
	field("Paid", money(b.Paid))
	if b.Refunded > 0 {
		field("Refunded", money(b.Refunded))
	}
	field("Balance", money(b.Owing))

	pdf.Ln(6)
	pdf.SetFont("Helvetica", "I", 8)
	pdf.MultiCell(0, 4, tr(fmt.Sprintf("Place of service and modifiers derived from the visit's recorded facts by the %s rule set. "+
		"The patient submits this statement to their insurer; it is not a claim filed by the clinic.", b.Derived.RuleSet)), "", "L", false)
	return pdf.Output(w)
}

// Serve answers b as a PDF download.
func Serve(w http.ResponseWriter, b *billing.Superbill) error {
	var buf bytes.Buffer
	if err := PDF(&buf, b); err != nil {
		return fmt.Errorf("superbill: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/pdf")
	h.Set("Content-Disposition", `attachment; filename="superbill-`+strconv.FormatInt(b.Visit.ID, 10)+`.pdf"`)
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(buf.Bytes())
	return err
}
