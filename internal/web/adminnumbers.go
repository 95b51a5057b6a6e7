package web

import (
	"net/http"
	"strconv"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
)

// numbersPage is /admin/numbers: the clinic's numbers of a range.
type numbersPage struct {
	From, To, Zone, Error  string
	N                      *app.Numbers
	Total                  numberView
	Days, Rooms, Providers []numberView
	Revenue                []string
	CSV                    string // the CSV links' query
}

// numberView is a row as the page shows it.
type numberView struct {
	Key, Name                            string
	Visits, Completed, Cancelled         int
	Walkins, Appointments                int
	NoShows, LateCancels, LeftBeforeSeen int
	NoShowRate, LeftRate                 string
	Wait, Start                          string
	CallsNotConnected, CallsRejoined     int
	Paid, Refunded                       string
}

// adminNumbers is GET /admin/numbers: the last 30 days unless a range is
// asked, in the zone asked (UTC unless given).
func (s *Server) adminNumbers(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	in := numbersQuery(r, s.app.Now())
	page := numbersPage{From: in.FromDate, To: in.ToDate, Zone: in.Zone}
	page.CSV = "from_date=" + in.FromDate + "&to_date=" + in.ToDate + "&timezone=" + in.Zone
	n, err := s.app.ClinicNumbers(r.Context(), p, in)
	status := http.StatusOK
	if err != nil {
		st, msg, ok := s.refused(r, err, clinic.EInvalid)
		if !ok {
			return err
		}
		status, page.Error = st, msg
	} else {
		page.N = n
		page.Total = numberViewOf(n.Total, n.Currency)
		for _, list := range []struct {
			in  []app.NumberRow
			out *[]numberView
		}{{n.Days, &page.Days}, {n.Rooms, &page.Rooms}, {n.Providers, &page.Providers}} {
			for _, row := range list.in {
				// A day with nothing in it is left to the CSV.
				if row.Visits > 0 || row.Paid > 0 || row.Refunded > 0 {
					*list.out = append(*list.out, numberViewOf(row, n.Currency))
				}
			}
		}
		for _, rv := range n.Revenue {
			page.Revenue = append(page.Revenue, app.FeeWords(rv.Paid, rv.Currency)+" paid, "+app.FeeWords(rv.Refunded, rv.Currency)+" refunded")
		}
	}
	s.render(w, r, status, "numbers", page)
	return nil
}

// adminNumbersCSV is GET /admin/numbers.csv: a group's rows as CSV.
func (s *Server) adminNumbersCSV(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	group := r.URL.Query().Get("group")
	if group != "room" && group != "provider" {
		group = "day"
	}
	n, err := s.app.ClinicNumbers(r.Context(), p, numbersQuery(r, s.app.Now()))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+n.CSVName(group)+`"`)
	return n.WriteCSV(w, group)
}

// numbersQuery is the range r asks, the last 30 days (UTC) by default.
func numbersQuery(r *http.Request, now time.Time) app.NumbersQuery {
	q := r.URL.Query()
	in := app.NumbersQuery{FromDate: q.Get("from_date"), ToDate: q.Get("to_date"), Zone: q.Get("timezone")}
	if in.Zone == "" {
		in.Zone = "UTC"
	}
	if in.ToDate == "" {
		in.ToDate = now.UTC().Format("2006-01-02")
	}
	if in.FromDate == "" {
		in.FromDate = now.UTC().AddDate(0, 0, -29).Format("2006-01-02")
	}
	return in
}

func numberViewOf(r app.NumberRow, currency string) numberView {
	pct := func(x float64) string { return strconv.FormatFloat(x*100, 'f', 1, 64) + "%" }
	secs := func(p50, p90 int64) string { return waitWords(p50) + " / " + waitWords(p90) }
	money := func(x int64) string {
		return strconv.FormatFloat(payments.ToMajor(x, currency), 'f', payments.Exponent(currency), 64)
	}
	return numberView{Key: r.Key, Name: r.Name, Visits: r.Visits, Completed: r.Completed, Cancelled: r.Cancelled, Walkins: r.Walkins,
		Appointments: r.Appointments, NoShows: r.NoShows, LateCancels: r.LateCancels, LeftBeforeSeen: r.LeftBeforeSeen,
		NoShowRate: pct(r.NoShowRate), LeftRate: pct(r.LeftRate), Wait: secs(r.WaitP50, r.WaitP90), Start: secs(r.StartP50, r.StartP90),
		CallsNotConnected: r.CallsNotConnected, CallsRejoined: r.CallsRejoined, Paid: money(r.Paid), Refunded: money(r.Refunded)}
}

// waitWords is seconds as minutes and seconds ("2 min 5 s").
func waitWords(s int64) string {
	if s < 60 {
		return strconv.FormatInt(s, 10) + " s"
	}
	out := strconv.FormatInt(s/60, 10) + " min"
	if s%60 != 0 {
		out += " " + strconv.FormatInt(s%60, 10) + " s"
	}
	return out
}
