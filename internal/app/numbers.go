package app

import (
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
	"teleclinic/internal/store"
)

// The clinic's numbers (GET /reports/numbers, /admin/numbers): what a
// range of days held, in total and by day, room and provider. They are
// computed from the visits themselves at each request: one pass over the
// range's entries of visits_claim_time gives exact percentiles over any
// range, which a daily rollup would not. A year of a 100,000-visit clinic
// answers in 433 ms on SQLite and 240 ms on PostgreSQL, against a 500 ms
// target (BenchmarkClinicNumbers; docs/performance.md).

// NumbersQuery is a range of days, both inclusive, in Zone (UTC unless
// given).
type NumbersQuery struct {
	FromDate, ToDate, Zone string
}

// maxNumberDays bounds a range: a year and a day.
const maxNumberDays = 366

// NumberRow is one row of the numbers: a day, a room, a provider or the
// total. Rates are shares (0 to 1); waits and starts are seconds.
type NumberRow struct {
	Key, Name                            string
	Visits, Completed, Cancelled         int
	Walkins, Appointments, Econsults     int
	NoShows, LateCancels, LeftBeforeSeen int
	NoShowRate, LeftRate                 float64
	WaitP50, WaitP90, StartP50, StartP90 int64
	CallsNotConnected, CallsRejoined     int
	Paid, Refunded                       int64 // in Numbers.Currency
	waits, starts                        []int64
}

// Numbers are the clinic's numbers of a range.
type Numbers struct {
	FromDate, ToDate, Zone string
	// Currency is what Paid and Refunded are in: the clinic's most used
	// currency of the range; Revenue has every currency's totals.
	Currency               string
	Total                  NumberRow
	Days, Rooms, Providers []NumberRow
	Revenue                []Revenue
}

// Revenue is what the range's payments in one currency came to, in its
// minor units.
type Revenue struct {
	Currency       string
	Paid, Refunded int64
}

// ClinicNumbers is GET /reports/numbers (extension, admin). Audited as
// report.numbers.
func (a *App) ClinicNumbers(ctx context.Context, p *clinic.Principal, in NumbersQuery) (*Numbers, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	out, err := a.clinicNumbers(ctx, p, in)
	return out, a.AuditOutcome(ctx, p, "report.numbers", "report", in.FromDate+".."+in.ToDate, err)
}

func (a *App) clinicNumbers(ctx context.Context, p *clinic.Principal, in NumbersQuery) (*Numbers, error) {
	zone := time.UTC
	if z := strings.TrimSpace(in.Zone); z != "" {
		loc, err := time.LoadLocation(z)
		if err != nil {
			return nil, clinic.Errorf(clinic.EInvalid, "timezone must be an IANA time zone such as America/New_York.")
		}
		zone = loc
	}
	from, err1 := time.ParseInLocation("2006-01-02", strings.TrimSpace(in.FromDate), zone)
	to, err2 := time.ParseInLocation("2006-01-02", strings.TrimSpace(in.ToDate), zone)
	if err1 != nil || err2 != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "from_date and to_date are required as YYYY-MM-DD.")
	}
	end := to.AddDate(0, 0, 1)
	if to.Before(from) || end.Sub(from) > maxNumberDays*24*time.Hour+time.Hour {
		return nil, clinic.Errorf(clinic.EInvalid, "to_date must be on or after from_date, at most %d days later.", maxNumberDays)
	}
	q := a.store.Read()
	vs, err := q.NumberVisits(ctx, p.Account.ID, from.Unix(), end.Unix())
	if err != nil {
		return nil, fmt.Errorf("numbers: %w", err)
	}
	// A call's facts are last written by its end: a visit of the range
	// ends within a day of its end, or it kept no call.
	callsOf, err := q.NumberCalls(ctx, p.Account.ID, from.Unix(), end.Unix()+2*86400)
	if err != nil {
		return nil, fmt.Errorf("numbers: %w", err)
	}
	pays, err := q.NumberPayments(ctx, p.Account.ID, from.Unix(), end.Unix())
	if err != nil {
		return nil, fmt.Errorf("numbers: %w", err)
	}
	out := &Numbers{FromDate: from.Format("2006-01-02"), ToDate: to.Format("2006-01-02"), Zone: zone.String(), Total: NumberRow{Key: "total"}}
	// The days' rows, and where each starts: a visit's day is found by a
	// search of the starts (a time's formatting in the zone, per visit,
	// was a tenth of the request at 100,000 visits).
	var starts []int64
	for d := from; d.Before(end); d = d.AddDate(0, 0, 1) {
		out.Days = append(out.Days, NumberRow{Key: d.Format("2006-01-02")})
		starts = append(starts, d.Unix())
	}
	dayOf := func(t int64) *NumberRow {
		i, found := slices.BinarySearch(starts, t)
		if !found {
			i--
		}
		if i < 0 || i >= len(out.Days) {
			return nil
		}
		return &out.Days[i]
	}
	rooms, providers := map[int64]*NumberRow{}, map[int64]*NumberRow{}
	row := func(m map[int64]*NumberRow, id int64) *NumberRow {
		r, ok := m[id]
		if !ok {
			r = &NumberRow{Key: strconv.FormatInt(id, 10)}
			m[id] = r
		}
		return r
	}
	for i := range vs {
		v := &vs[i]
		rows := []*NumberRow{&out.Total, dayOf(v.When)}
		if v.RoomID != 0 {
			rows = append(rows, row(rooms, v.RoomID))
		}
		if v.ProviderID != 0 {
			rows = append(rows, row(providers, v.ProviderID))
		}
		call := callsOf[v.ID]
		for _, r := range rows {
			if r != nil {
				r.add(v, call)
			}
		}
	}
	// The payments, by currency; the rows carry the main one's.
	byCurrency := map[string]*Revenue{}
	for _, pay := range pays {
		rv, ok := byCurrency[pay.Currency]
		if !ok {
			rv = &Revenue{Currency: pay.Currency}
			byCurrency[pay.Currency] = rv
		}
		rv.Paid += pay.Paid
		rv.Refunded += pay.Refunded
	}
	for _, rv := range byCurrency {
		out.Revenue = append(out.Revenue, *rv)
	}
	slices.SortFunc(out.Revenue, func(x, y Revenue) int {
		return cmp.Or(cmp.Compare(y.Paid, x.Paid), strings.Compare(x.Currency, y.Currency))
	})
	out.Currency = "USD"
	if len(out.Revenue) > 0 {
		out.Currency = out.Revenue[0].Currency
	}
	for _, pay := range pays {
		if pay.Currency != out.Currency {
			continue
		}
		for _, r := range []*NumberRow{&out.Total, dayOf(pay.Created)} {
			if r != nil {
				r.Paid += pay.Paid
				r.Refunded += pay.Refunded
			}
		}
	}
	for i := range out.Days {
		out.Days[i].finish()
	}
	out.Total.finish()
	if out.Rooms, err = a.namedRows(ctx, p, rooms, true); err != nil {
		return nil, err
	}
	if out.Providers, err = a.namedRows(ctx, p, providers, false); err != nil {
		return nil, err
	}
	return out, nil
}

// add counts visit v in r.
func (r *NumberRow) add(v *store.NumberVisit, call store.NumberCall) {
	r.Visits++
	switch v.Status {
	case clinic.VisitCompleted:
		r.Completed++
	case clinic.VisitCancelled:
		r.Cancelled++
	}
	switch v.Kind {
	case store.NumberWalkin:
		r.Walkins++
		if v.Late >= 0 {
			r.waits = append(r.waits, v.Late)
		} else if v.Status == clinic.VisitCancelled {
			r.LeftBeforeSeen++ // left the waiting room, or was taken off it, unseen
		}
	case store.NumberAppointment:
		r.Appointments++
		if v.Late >= 0 {
			r.starts = append(r.starts, v.Late)
		}
	case store.NumberEconsult:
		r.Econsults++
	}
	switch v.Outcome {
	case store.NumberNoShow:
		if v.Kind == store.NumberAppointment {
			r.NoShows++
		}
	case store.NumberLateCancel:
		r.LateCancels++
	}
	// A video visit that started but whose call never had a patient and
	// a provider together (or kept no record of one).
	if v.Kind != store.NumberEconsult && v.Late >= 0 && v.Status == clinic.VisitCompleted && call.CallStart == 0 {
		r.CallsNotConnected++
	}
	if call.Rejoins > 0 {
		r.CallsRejoined++
	}
}

// finish works out r's rates and percentiles.
func (r *NumberRow) finish() {
	if r.Appointments > 0 {
		r.NoShowRate = rate(r.NoShows, r.Appointments)
	}
	if r.Walkins > 0 {
		r.LeftRate = rate(r.LeftBeforeSeen, r.Walkins)
	}
	r.WaitP50, r.WaitP90 = percentile(r.waits, 50), percentile(r.waits, 90)
	r.StartP50, r.StartP90 = percentile(r.starts, 50), percentile(r.starts, 90)
	r.waits, r.starts = nil, nil
}

// rate is n of of, to three places.
func rate(n, of int) float64 { return math.Round(float64(n)/float64(of)*1000) / 1000 }

// percentile is the nearest-rank p-th percentile of xs (0 when empty):
// the smallest value with at least p% of them at or below it.
func percentile(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	rank := (p*len(xs) + 99) / 100 // ceil(p/100 × n)
	return xs[max(rank, 1)-1]
}

// namedRows are the rows of m, each named (the room's code and name, or
// the provider's name), most visits first.
func (a *App) namedRows(ctx context.Context, p *clinic.Principal, m map[int64]*NumberRow, rooms bool) ([]NumberRow, error) {
	out := make([]NumberRow, 0, len(m))
	var ids []int64
	for id := range m {
		ids = append(ids, id)
	}
	q := a.store.Read()
	var users map[int64]*clinic.User
	if !rooms {
		var err error
		if users, err = q.UsersByIDs(ctx, p.Account.ID, ids); err != nil {
			return nil, fmt.Errorf("numbers: %w", err)
		}
	}
	for id, r := range m {
		if rooms {
			if rm, err := q.RoomByID(ctx, p.Account.ID, id); err == nil {
				r.Key, r.Name = rm.Code, rm.Name
			}
		} else if u := users[id]; u != nil {
			r.Name = u.FullName()
		}
		r.finish()
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y NumberRow) int {
		return cmp.Or(cmp.Compare(y.Visits, x.Visits), strings.Compare(x.Key, y.Key))
	})
	return out, nil
}

// CSVName is the file name of n's CSV of group.
func (n *Numbers) CSVName(group string) string {
	return "numbers-" + n.FromDate + "-" + n.ToDate + "-" + group + ".csv"
}

// WriteCSV writes the rows of group (day, room or provider) and the total
// as CSV: seconds for waits, shares for rates, amounts in n.Currency.
func (n *Numbers) WriteCSV(w io.Writer, group string) error {
	rows := map[string][]NumberRow{"day": n.Days, "room": n.Rooms, "provider": n.Providers}[group]
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{group, "name", "visits", "completed", "cancelled", "walkins", "appointments", "econsults", "no_shows", "late_cancels",
		"left_before_seen", "no_show_rate", "left_before_seen_rate", "wait_p50_s", "wait_p90_s", "start_p50_s", "start_p90_s",
		"calls_not_connected", "calls_rejoined", "paid_" + n.Currency, "refunded_" + n.Currency})
	i, d := strconv.Itoa, func(x int64) string { return strconv.FormatInt(x, 10) }
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	money := func(x int64) string { return f(payments.ToMajor(x, n.Currency)) }
	for _, r := range append(slices.Clone(rows), n.Total) {
		_ = cw.Write([]string{r.Key, r.Name, i(r.Visits), i(r.Completed), i(r.Cancelled), i(r.Walkins), i(r.Appointments), i(r.Econsults),
			i(r.NoShows), i(r.LateCancels), i(r.LeftBeforeSeen), f(r.NoShowRate), f(r.LeftRate), d(r.WaitP50), d(r.WaitP90), d(r.StartP50),
			d(r.StartP90), i(r.CallsNotConnected), i(r.CallsRejoined), money(r.Paid), money(r.Refunded)})
	}
	cw.Flush()
	return cw.Error()
}
