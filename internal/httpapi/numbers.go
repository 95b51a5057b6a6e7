package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
)

type numbersOut struct {
	FromDate  string         `json:"from_date"`
	ToDate    string         `json:"to_date"`
	Timezone  string         `json:"timezone"`
	Currency  string         `json:"currency"`
	Total     numberRowOut   `json:"total"`
	Days      []numberRowOut `json:"days"`
	Rooms     []numberRowOut `json:"rooms"`
	Providers []numberRowOut `json:"providers"`
	Revenue   []revenueOut   `json:"revenue"`
}

type numberRowOut struct {
	Key               string  `json:"key"`
	Name              string  `json:"name,omitempty"`
	Visits            int     `json:"visits"`
	Completed         int     `json:"completed"`
	Cancelled         int     `json:"cancelled"`
	Walkins           int     `json:"walkins"`
	Appointments      int     `json:"appointments"`
	Econsults         int     `json:"econsults"`
	NoShows           int     `json:"no_shows"`
	LateCancels       int     `json:"late_cancels"`
	LeftBeforeSeen    int     `json:"left_before_seen"`
	NoShowRate        float64 `json:"no_show_rate"`
	LeftRate          float64 `json:"left_before_seen_rate"`
	WaitP50           int64   `json:"wait_p50"`
	WaitP90           int64   `json:"wait_p90"`
	StartP50          int64   `json:"start_p50"`
	StartP90          int64   `json:"start_p90"`
	CallsNotConnected int     `json:"calls_not_connected"`
	CallsRejoined     int     `json:"calls_rejoined"`
	Paid              float64 `json:"paid"`
	Refunded          float64 `json:"refunded"`
}

type revenueOut struct {
	Currency string  `json:"currency"`
	Paid     float64 `json:"paid"`
	Refunded float64 `json:"refunded"`
}

func toNumberRow(r app.NumberRow, currency string) numberRowOut {
	return numberRowOut{Key: r.Key, Name: r.Name, Visits: r.Visits, Completed: r.Completed, Cancelled: r.Cancelled, Walkins: r.Walkins,
		Appointments: r.Appointments, Econsults: r.Econsults, NoShows: r.NoShows, LateCancels: r.LateCancels, LeftBeforeSeen: r.LeftBeforeSeen,
		NoShowRate: r.NoShowRate, LeftRate: r.LeftRate, WaitP50: r.WaitP50, WaitP90: r.WaitP90, StartP50: r.StartP50, StartP90: r.StartP90,
		CallsNotConnected: r.CallsNotConnected, CallsRejoined: r.CallsRejoined,
		Paid: payments.ToMajor(r.Paid, currency), Refunded: payments.ToMajor(r.Refunded, currency)}
}

// ToNumbers is n as the API answers it (the portal's page draws the same).
func toNumbers(n *app.Numbers) numbersOut {
	out := numbersOut{FromDate: n.FromDate, ToDate: n.ToDate, Timezone: n.Zone, Currency: n.Currency, Total: toNumberRow(n.Total, n.Currency),
		Days: []numberRowOut{}, Rooms: []numberRowOut{}, Providers: []numberRowOut{}, Revenue: []revenueOut{}}
	for _, list := range []struct {
		in  []app.NumberRow
		out *[]numberRowOut
	}{{n.Days, &out.Days}, {n.Rooms, &out.Rooms}, {n.Providers, &out.Providers}} {
		for _, r := range list.in {
			*list.out = append(*list.out, toNumberRow(r, n.Currency))
		}
	}
	for _, rv := range n.Revenue {
		out.Revenue = append(out.Revenue, revenueOut{Currency: rv.Currency, Paid: payments.ToMajor(rv.Paid, rv.Currency), Refunded: payments.ToMajor(rv.Refunded, rv.Currency)})
	}
	return out
}

// clinicNumbers is GET /reports/numbers (extension): the clinic's
// numbers of a range as JSON, or with format=csv one group's rows (day,
// room or provider) and the total as CSV.
func (s *Server) clinicNumbers(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	format, group := q.Str("format"), q.Str("group")
	if format != "" && format != "json" && format != "csv" {
		return clinic.Errorf(clinic.EInvalid, "format is json (the default) or csv.")
	}
	if group == "" {
		group = "day"
	}
	if group != "day" && group != "room" && group != "provider" {
		return clinic.Errorf(clinic.EInvalid, "group is day (the default), room or provider.")
	}
	n, err := s.app.ClinicNumbers(r.Context(), c.p, app.NumbersQuery{FromDate: q.Str("from_date"), ToDate: q.Str("to_date"), Zone: q.Str("timezone")})
	if err != nil {
		return err
	}
	out := toNumbers(n)
	if format != "csv" {
		return ok(w, out)
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+n.CSVName(group)+`"`)
	return n.WriteCSV(w, group)
}
