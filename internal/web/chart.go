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
	// ReadingsBefore, FilesBefore and RxBefore are the page of each list
	// asked for (the last item of the page before, 0 the latest);
	// VisitsPaged says the visits shown are not the latest.
	ReadingsBefore, FilesBefore, RxBefore int64
	Visits                                []visitItem
	VisitsPaged                           bool
	// Each long list's page links.
	VisitsPager, FilesPager, RxPager, ReadingsPager pager
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
	q, f := readChartQuery(r)
	if err := f.Err(); err != nil {
		return err
	}
	page.ReadingsBefore, page.FilesBefore, page.RxBefore = q.ReadingsBefore, q.FilesBefore, q.RxBefore
	for _, load := range []func(context.Context, *clinic.Principal, int64, chartQuery, *chartPage) error{
		s.chartEMR, s.chartFiles, s.chartInsurance, s.chartPrescriptions, s.chartPharmacies, s.chartReadings, s.chartConsents, s.chartVisits,
	} {
		if err := load(ctx, p, uid, q, &page); err != nil {
			return err
		}
	}
	s.render(w, r, http.StatusOK, "chart", page)
	return nil
}

// chartQuery is the chart's address: the page each long list shows (the
// last item of the page before, 0 the latest).
type chartQuery struct {
	ReadingsBefore, FilesBefore, RxBefore, VisitsAfter int64
}

func readChartQuery(r *http.Request) (chartQuery, *fields) {
	f := queryFields(r)
	return chartQuery{ReadingsBefore: f.place("readings_before"), FilesBefore: f.place("files_before"),
		RxBefore: f.place("rx_before"), VisitsAfter: f.place("visits_after")}, f
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

// shownRefused puts err in a chart part's place when the part's rule
// refuses the caller (refusal), and returns any other error.
func shownRefused(state *chartSection, err error) error {
	var e error
	*state, e = refusal(err)
	return e
}

// chartEMR is the record's sections that were ever filled in, by name.
func (s *Server) chartEMR(ctx context.Context, p *clinic.Principal, uid int64, _ chartQuery, page *chartPage) error {
	emr, err := s.app.GetEMR(ctx, p, uid)
	if err != nil {
		return shownRefused(&page.EMRState, err)
	}
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
	return nil
}

// chartFiles is a page of the patient's files, newest first.
func (s *Server) chartFiles(ctx context.Context, p *clinic.Principal, uid int64, q chartQuery, page *chartPage) error {
	files, err := s.app.ListFiles(ctx, p, app.FileQuery{TargetID: uid, TargetType: "user", Before: q.FilesBefore, Limit: chartListPage})
	at := chartList{pager{Label: "Files", BackText: "Latest files", NextText: "Earlier files"}, "files-h", "files_before", q.FilesBefore}
	return showList(files, err, uid, at, &page.Files, &page.FilesPager, &page.FilesState)
}

// chartList is one of the chart's long lists: its pager's texts, its
// anchor, the parameter that pages it and the page asked for.
type chartList struct {
	pager
	anchor, param string
	before        int64
}

// showList puts a page of a chart's long list on the page, with its
// pager; a refusal of the list's rule is shown in its place.
func showList[T any](got clinic.Page[T], err error, uid int64, at chartList, items *[]T, pg *pager, state *chartSection) error {
	if err != nil {
		return shownRefused(state, err)
	}
	*items = got.Items
	*pg = at.pager.on(chartPath(uid), at.anchor, at.param, at.before > 0, got.Next, nil)
	return nil
}

// chartInsurance is the patient's cards and their latest eligibility
// check.
func (s *Server) chartInsurance(ctx context.Context, p *clinic.Principal, uid int64, _ chartQuery, page *chartPage) error {
	cards, err := s.app.InsuranceCards(ctx, p, uid)
	if err != nil {
		return shownRefused(&page.CardsState, err)
	}
	for _, c := range cards {
		page.Cards = append(page.Cards, cardItemOf(c))
	}
	if job, e := s.app.Eligibility(ctx, p, uid); e == nil {
		page.Eligibility = job
		var details any
		if b, err := json.Marshal(job.Details); err == nil && json.Unmarshal(b, &details) == nil {
			page.EligibilityDetails = fieldsOf(details)
		}
	}
	return nil
}

// cardItemOf is an insurance card's fields that hold text, by name.
func cardItemOf(c *app.Card) cardItem {
	ci := cardItem{Type: c.CardType}
	for k, v := range c.Fields {
		if str, ok := v.(string); ok && str != "" {
			ci.Fields = append(ci.Fields, kv{k, str})
		}
	}
	sort.Slice(ci.Fields, func(i, j int) bool { return ci.Fields[i].Key < ci.Fields[j].Key })
	return ci
}

// chartPrescriptions is a page of the patient's prescriptions, newest
// first, current and discontinued.
func (s *Server) chartPrescriptions(ctx context.Context, p *clinic.Principal, uid int64, q chartQuery, page *chartPage) error {
	rxs, err := s.app.Prescriptions(ctx, p, uid, app.RxQuery{Status: "All", Before: q.RxBefore, Limit: chartListPage})
	at := chartList{pager{Label: "Prescriptions", BackText: "Latest prescriptions", NextText: "Earlier prescriptions"}, "rx-h", "rx_before", q.RxBefore}
	return showList(rxs, err, uid, at, &page.Prescriptions, &page.RxPager, &page.RxState)
}

// chartPharmacies is the patient's pharmacies.
func (s *Server) chartPharmacies(ctx context.Context, p *clinic.Principal, uid int64, _ chartQuery, page *chartPage) error {
	phs, err := s.app.Pharmacies(ctx, p, uid)
	if err != nil {
		return shownRefused(&page.PharmaciesState, err)
	}
	for _, ph := range phs {
		name, _ := ph.Fields["name"].(string)
		page.Pharmacies = append(page.Pharmacies, pharmacyItem{Name: name, Code: ph.Code, Default: ph.IsDefault})
	}
	return nil
}

// chartReadings is a page of the patient's device readings, the latest
// first.
func (s *Server) chartReadings(ctx context.Context, p *clinic.Principal, uid int64, q chartQuery, page *chartPage) error {
	rs, err := s.app.Readings(ctx, p, uid, app.ReadingQuery{Before: q.ReadingsBefore, Limit: chartReadingsPage})
	if err != nil {
		return shownRefused(&page.ReadingsState, err)
	}
	page.ReadingsPager = pager{Label: "Device readings", BackText: "Latest readings", NextText: "Earlier readings"}.
		on(chartPath(uid), "readings-h", "readings_before", q.ReadingsBefore > 0, rs.Next, nil)
	for _, rd := range rs.Items {
		var vals []string
		for _, f := range fieldsOf(rd.Values) {
			vals = append(vals, f.Key+" "+f.Value)
		}
		page.Readings = append(page.Readings, readingItem{Type: words(rd.DataType), Date: rd.Date, Values: strings.Join(vals, ", ")})
	}
	return nil
}

// chartConsents is the patient's signed consents.
func (s *Server) chartConsents(ctx context.Context, p *clinic.Principal, uid int64, _ chartQuery, page *chartPage) error {
	cs, err := s.app.Consents(ctx, p, uid)
	if err != nil {
		return shownRefused(&page.ConsentsState, err)
	}
	page.Consents = cs
	return nil
}

// chartVisits is a page of the patient's visits the caller sees, newest
// first.
func (s *Server) chartVisits(ctx context.Context, p *clinic.Principal, uid int64, q chartQuery, page *chartPage) error {
	vs, err := s.app.ListVisits(ctx, p, app.VisitQuery{MemberID: uid, After: q.VisitsAfter, Limit: chartVisitsPage})
	if err != nil {
		return err
	}
	page.VisitsPaged = q.VisitsAfter > 0
	page.VisitsPager = pager{Label: "Visits", BackText: "Latest visits", NextText: "Older visits"}.
		on(chartPath(uid), "visits-h", "visits_after", page.VisitsPaged, vs.Next, nil)
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
	return nil
}

// chartPath is the chart's address.
func chartPath(uid int64) string { return "/providers/patient/" + strconv.FormatInt(uid, 10) }

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
