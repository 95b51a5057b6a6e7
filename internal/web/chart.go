package web

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// chartSection is one part of a patient's chart: its rows, or why the
// caller does not see it. Each part is read by the operation of its API
// route, with that route's rule; a part the rule refuses says so instead
// of failing the page.
type chartSection struct {
	Refused string
}

type chartPage struct {
	ID                       int64
	Name, DOB, Gender, Email string
	Phone, Address, Timezone string
	EMR                      []emrItem
	EMRState                 chartSection
	Files                    []*app.FileInfo
	FilesState               chartSection
	Cards                    []cardItem
	CardsState               chartSection
	Eligibility              *clinic.EligibilityJob
	EligibilityDetails       []kv
	Prescriptions            []*app.PrescriptionView
	RxState                  chartSection
	Pharmacies               []pharmacyItem
	PharmaciesState          chartSection
	Readings                 []readingItem
	ReadingsState            chartSection
	// ReadingsBefore is the page of readings asked for (the last reading
	// of the page before, 0 the latest), ReadingsMore the last one shown
	// when earlier ones follow.
	ReadingsBefore, ReadingsMore int64
	// FilesBefore and RxBefore, FilesMore and RxMore are the same for the
	// patient's files and prescriptions.
	FilesBefore, FilesMore int64
	RxBefore, RxMore       int64
	Visits                 []visitItem
	// VisitsMore is the last visit shown when older ones follow (the next
	// page's visits_after); VisitsPaged says this is not the first page.
	VisitsMore  int64
	VisitsPaged bool
	// Consents are the patient's signed consents.
	Consents      []*clinic.Consent
	ConsentsState chartSection
}

// emrItem is an EMR section as people read it: its entries, each a list
// of fields; NotReported when the patient chose not to say.
type emrItem struct {
	Name        string
	Entries     [][]kv
	NotReported bool
	Modified    int64
}

type cardItem struct {
	Type   string
	Fields []kv
}

type kv struct{ Key, Value string }

type pharmacyItem struct {
	Name, Code string
	Default    bool
}

type readingItem struct {
	Type, Date, Values string
}

// refusal is what a chart part says for err: the caller may not see it
// (the API's 403 or 404), or err itself for anything else.
func refusal(err error) (chartSection, error) {
	switch clinic.ErrorCode(err) {
	case clinic.EForbidden, clinic.ENotFound, clinic.EInvalid:
		return chartSection{Refused: clinic.ErrorMessage(err)}, nil
	}
	return chartSection{}, err
}

// chart is /providers/patient/{user_id}: a patient's chart for a provider
// (or the clinic's admin): profile, EMR sections, files with their view
// links, insurance cards and the latest eligibility result,
// prescriptions and pharmacies, device readings, and the visits with
// their threads. The profile decides whether there is a page at all, as
// GET /users/{id} does.
func (s *Server) chart(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	uid, err := strconv.ParseInt(r.PathValue("user_id"), 10, 64)
	if err != nil || uid <= 0 {
		return clinic.Errorf(clinic.ENotFound, "User not found.")
	}
	if !isProviderOrAdmin(p) {
		return clinic.Errorf(clinic.EForbidden, "A patient's chart is for the clinic's providers.")
	}
	ctx := r.Context()
	prof, err := s.app.GetUser(ctx, p, uid, "")
	if err != nil {
		return err
	}
	u := prof.User
	page := chartPage{ID: u.ID, Name: u.FullName(), DOB: u.DOB, Email: u.Email, Phone: u.Phone, Timezone: u.Timezone,
		Gender: map[int]string{clinic.GenderMale: "male", clinic.GenderFemale: "female"}[u.Gender]}
	for _, part := range []string{u.StreetAddr, u.City, u.State, u.Zip} {
		if part != "" {
			if page.Address != "" {
				page.Address += ", "
			}
			page.Address += part
		}
	}
	q := r.URL.Query()
	page.ReadingsBefore, _ = strconv.ParseInt(q.Get("readings_before"), 10, 64)
	page.FilesBefore, _ = strconv.ParseInt(q.Get("files_before"), 10, 64)
	page.RxBefore, _ = strconv.ParseInt(q.Get("rx_before"), 10, 64)
	if err := s.chartRecords(ctx, p, uid, &page); err != nil {
		return err
	}
	if page.Consents, err = s.app.Consents(ctx, p, uid); err != nil {
		if page.ConsentsState, err = refusal(err); err != nil {
			return err
		}
	}
	// The patient's visits the caller sees, newest first, a page at a time
	// (keyset: visits_after is the last one shown).
	after, _ := strconv.ParseInt(r.URL.Query().Get("visits_after"), 10, 64)
	vs, err := s.app.ListVisits(ctx, p, app.VisitQuery{MemberID: uid, After: max(after, 0), Limit: chartVisitsPage})
	if err != nil {
		return err
	}
	page.VisitsPaged, page.VisitsMore = after > 0, vs.Next
	for _, d := range vs.Items {
		it := visitItem{ID: d.Visit.ID, Status: statusWord(d.Visit.Status), Created: d.Visit.Created}
		if d.Room != nil {
			it.Room = d.Room.Name
		}
		if d.Provider != nil {
			it.With = d.Provider.FullName()
		}
		if d.Intake != nil {
			it.Reason, it.Answers = d.Intake.ReasonForVisit, answersOf(d)
		}
		page.Visits = append(page.Visits, it)
	}
	s.render(w, r, http.StatusOK, "chart", page)
	return nil
}

// chartVisitsPage is how many of the patient's visits the chart shows at
// a time.
const chartVisitsPage = 50

// chartReadingsPage is how many device readings a chart shows at a time,
// and chartListPage how many files and prescriptions.
const (
	chartReadingsPage = 50
	chartListPage     = 20
)

func isProviderOrAdmin(p *clinic.Principal) bool {
	return p.IsAdmin() || (p.User != nil && p.User.Type == clinic.UserProvider)
}

// chartRecords reads the chart's parts.
func (s *Server) chartRecords(ctx context.Context, p *clinic.Principal, uid int64, page *chartPage) (err error) {
	if emr, e := s.app.GetEMR(ctx, p, uid); e != nil {
		if page.EMRState, err = refusal(e); err != nil {
			return err
		}
	} else {
		for name, sec := range emr {
			if sec == nil || (sec.Data == nil && sec.DataNotReported == nil) {
				continue
			}
			it := emrItem{Name: words(name), Entries: entries(sec.Data), Modified: sec.Modified,
				NotReported: sec.DataNotReported != nil && *sec.DataNotReported}
			if len(it.Entries) == 0 && !it.NotReported && sec.Modified == 0 {
				continue // never filled in
			}
			page.EMR = append(page.EMR, it)
		}
		sort.Slice(page.EMR, func(i, j int) bool { return page.EMR[i].Name < page.EMR[j].Name })
	}
	// Files and prescriptions newest first, a page at a time (keyset by
	// id).
	if files, e := s.app.ListFiles(ctx, p, app.FileQuery{TargetID: uid, TargetType: "user", Before: max(page.FilesBefore, 0), Limit: chartListPage}); e != nil {
		if page.FilesState, err = refusal(e); err != nil {
			return err
		}
	} else {
		page.Files, page.FilesMore = files.Items, files.Next
	}
	if cards, e := s.app.InsuranceCards(ctx, p, uid); e != nil {
		if page.CardsState, err = refusal(e); err != nil {
			return err
		}
	} else {
		for _, c := range cards {
			ci := cardItem{Type: c.CardType}
			for k, v := range c.Fields {
				if str, ok := v.(string); ok && str != "" {
					ci.Fields = append(ci.Fields, kv{k, str})
				}
			}
			sort.Slice(ci.Fields, func(i, j int) bool { return ci.Fields[i].Key < ci.Fields[j].Key })
			page.Cards = append(page.Cards, ci)
		}
		if job, e := s.app.Eligibility(ctx, p, uid); e == nil {
			page.Eligibility = job
			var details any
			if b, err := json.Marshal(job.Details); err == nil && json.Unmarshal(b, &details) == nil {
				page.EligibilityDetails = fieldsOf(details)
			}
		}
	}
	if rxs, e := s.app.Prescriptions(ctx, p, uid, app.RxQuery{Status: "All", Before: max(page.RxBefore, 0), Limit: chartListPage}); e != nil {
		if page.RxState, err = refusal(e); err != nil {
			return err
		}
	} else {
		page.Prescriptions, page.RxMore = rxs.Items, rxs.Next
	}
	if phs, e := s.app.Pharmacies(ctx, p, uid); e != nil {
		if page.PharmaciesState, err = refusal(e); err != nil {
			return err
		}
	} else {
		for _, ph := range phs {
			name, _ := ph.Fields["name"].(string)
			page.Pharmacies = append(page.Pharmacies, pharmacyItem{Name: name, Code: ph.Code, Default: ph.IsDefault})
		}
	}
	// The latest readings, a page at a time (keyset: readings_before is
	// the last one shown).
	if rs, e := s.app.Readings(ctx, p, uid, app.ReadingQuery{Before: max(page.ReadingsBefore, 0), Limit: chartReadingsPage}); e != nil {
		if page.ReadingsState, err = refusal(e); err != nil {
			return err
		}
	} else {
		page.ReadingsMore = rs.Next
		for _, rd := range rs.Items {
			var vals []string
			for _, f := range fieldsOf(rd.Values) {
				vals = append(vals, f.Key+" "+f.Value)
			}
			page.Readings = append(page.Readings, readingItem{Type: words(rd.DataType), Date: rd.Date, Values: strings.Join(vals, ", ")})
		}
	}
	return nil
}

// The chart prints a record's JSON as fields people read: an object's
// keys become labels ("date_of_birth" → "Date of birth"), lists are
// joined, true and false are yes and no, and what is empty is left out.

// entries are a section's data as entries: a list's items, or the one
// object.
func entries(data any) [][]kv {
	var out [][]kv
	switch d := data.(type) {
	case []any:
		for _, it := range d {
			if f := fieldsOf(it); len(f) > 0 {
				out = append(out, f)
			}
		}
	default:
		if f := fieldsOf(d); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// fieldsOf is a value's fields: an object's, by label; anything else is
// one field without a label.
func fieldsOf(v any) []kv {
	m, ok := v.(map[string]any)
	if !ok {
		if s := plain(v); s != "" {
			return []kv{{"", s}}
		}
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []kv
	for _, k := range keys {
		if s := plain(m[k]); s != "" {
			out = append(out, kv{words(k), s})
		}
	}
	return out
}

// plain writes a value in words.
func plain(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		var parts []string
		for _, it := range x {
			if s := plain(it); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		var parts []string
		for _, f := range fieldsOf(x) {
			parts = append(parts, f.Key+": "+f.Value)
		}
		return strings.Join(parts, "; ")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// words makes a storage name a label: "family_history" → "Family history".
func words(name string) string {
	s := strings.TrimSpace(strings.ReplaceAll(name, "_", " "))
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// answersOf are the answers of visit d's intake to its room's questions,
// labelled as the room asks them now (an answer to a question since
// removed keeps its id).
func answersOf(d *app.VisitDetail) []kv {
	var out []kv
	var qs []clinic.IntakeQuestion
	if d.Room != nil {
		qs = d.Room.Settings.IntakeQuestions
	}
	seen := map[string]bool{}
	for _, q := range qs {
		if v := d.Intake.Custom[clinic.AnswerKey(q.ID)]; v != "" {
			out = append(out, kv{q.Label, v})
			seen[clinic.AnswerKey(q.ID)] = true
		}
	}
	var rest []string
	for k := range d.Intake.Custom {
		if strings.HasPrefix(k, "q_") && !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, kv{strings.TrimPrefix(k, "q_"), d.Intake.Custom[k]})
	}
	return out
}
