package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	clinicpkg "teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// listsScenario measures what a page of each visit list, and of the users
// list, costs as the clinic grows: for each size of --list-visits it stops
// the server, adds visits and patients through the store until the clinic
// holds that many of each (a hundred thousand through the API would take
// longer than the runs), starts the server again and reads pages of 50 for
// --duration at each connection count. The
// server's CPU per request (with PostgreSQL's, when it is on this machine)
// at the largest size over the smallest is the list's cost growth
// (docs/performance.md, "Cost growth").
func (c *clinic) listsScenario(ctx context.Context, o *options, s *seeded, srv *serverProc, progress func(string, ...any)) ([]Result, error) {
	if srv == nil || o.Processes > 1 {
		return nil, fmt.Errorf("lists needs the one server the tool starts (not --url, not --processes)")
	}
	type list struct {
		name  string
		token string
		path  string
		query url.Values
	}
	var out []Result
	first := map[string]Result{}
	for _, size := range o.ListVisits {
		progress("  stopping the server to grow the clinic to %d visits and users… ", size)
		srv.stop()
		t0 := time.Now()
		mid, held, people, err := growClinic(ctx, srv.store, c.code, s.room, s.patients[0].id, size)
		if err != nil {
			return nil, fmt.Errorf("grow to %d visits: %w", size, err)
		}
		progress("%.1f s\n", time.Since(t0).Seconds())
		if err := srv.restart(ctx); err != nil {
			return nil, err
		}
		if o.Database != "" {
			if err := analyze(ctx, o.Database); err != nil {
				return nil, fmt.Errorf("analyze: %w", err)
			}
		}
		lists := []list{
			{"clinic", c.admin, "/api_v3/visits", url.Values{}},
			{"clinic, middle", c.admin, "/api_v3/visits", url.Values{"after": {strconv.FormatInt(mid, 10)}}},
			{"patient", s.patients[0].token, "/api_v3/visits", url.Values{}},
			{"provider", s.patients[0].providerToken, "/api_v3/visits", url.Values{}},
			{"room", c.admin, "/api_v3/visits", url.Values{"room_code": {s.room}}},
			// The users list answers its total_count with every page.
			{"users", c.admin, "/api_v3/users", url.Values{}},
			{"users: patients", c.admin, "/api_v3/users", url.Values{"type": {"200"}}},
			{"users: by name", c.admin, "/api_v3/users", url.Values{"type": {"200"}, "sort": {"full_name.asc"}}},
		}
		for _, l := range lists {
			l.query.Set("limit", "50")
			mk := func(int, int) (*http.Request, error) { return c.req("GET", l.path, l.token, l.query) }
			for _, conns := range o.Connections {
				name := "lists: " + l.name
				progress("  %-22s %6d visits c=%-4d ", name, size, conns)
				cpu0, st0 := usage([]*serverProc{srv})
				db0 := postgresCPU()
				r := load(ctx, name, conns, o.Duration, mk, progress)
				if cpu1, st1 := usage([]*serverProc{srv}); r.Requests > 0 {
					r.CPUms = ms(cpu1-cpu0) / float64(r.Requests)
					r.Statements = float64(st1-st0) / float64(r.Requests)
					if o.Database != "" {
						r.DBCPUms = ms(postgresCPU()-db0) / float64(r.Requests)
					}
				}
				progress("%8.0f req/s, %.2f ms CPU a page\n", r.RPS, r.CPUms)
				r.Note = fmt.Sprintf("%d visits, %d users", held, people)
				key := fmt.Sprintf("%s/%d", l.name, conns)
				if f, ok := first[key]; !ok {
					first[key] = r
				} else if f.CPUms > 0 {
					r.Note += fmt.Sprintf("; CPU a page %.2f× and p50 %.2f× the figure at %d visits", (r.CPUms+r.DBCPUms)/(f.CPUms+f.DBCPUms), r.P50ms/f.P50ms, o.ListVisits[0])
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// growClinic adds patients and visits to the clinic of code through the
// store until it holds size of each (and at least freshVisits new visits),
// and returns the id of the visit in the middle of those it added and how
// many visits and users it holds (more than size when the other scenarios
// made more). The patients have a hundred first names. The visits are
// spread as a clinic's are: every tenth is the first seeded patient's (the
// others the seeded patients' in turn), every seventh an unassigned
// e-consult in the room, the rest appointments of the eight providers in
// turn; half of those are completed.
func growClinic(ctx context.Context, storeArgs []string, code, roomCode, patientID string, size int) (mid int64, have, people int, err error) {
	pat0, err := strconv.ParseInt(patientID, 10, 64)
	if err != nil {
		return 0, 0, 0, err
	}
	st, err := store.Open(ctx, storeDSN(storeArgs))
	if err != nil {
		return 0, 0, 0, err
	}
	defer st.Close()
	r := st.Read()
	acct, err := r.AccountByCode(ctx, code)
	if err != nil {
		return 0, 0, 0, err
	}
	room, err := r.RoomByCode(ctx, acct.ID, roomCode)
	if err != nil {
		return 0, 0, 0, err
	}
	if people, err = growPatients(ctx, st, acct.ID, size); err != nil {
		return 0, 0, 0, err
	}
	mid, have, err = growVisits(ctx, st, acct.ID, room.ID, pat0, size)
	return mid, have, people, err
}

// growPatients adds patients until the clinic holds size users, and says
// how many it holds.
func growPatients(ctx context.Context, st *store.Store, accountID int64, size int) (have int, err error) {
	if err := st.DB().QueryRowContext(ctx, st.Rebind("SELECT COUNT(*) FROM users WHERE account_id = ?"), accountID).Scan(&have); err != nil {
		return 0, err
	}
	now := time.Now().Unix()
	for have < size {
		batch := min(size-have, 5000)
		err := st.Tx(ctx, func(q *store.Q) error {
			for i := have; i < have+batch; i++ {
				code := fmt.Sprintf("grown-%d", i)
				u := &clinicpkg.User{AccountID: accountID, Code: code, SvcID: "svc-" + code, Username: code,
					FirstName: fmt.Sprintf("Name%02d", i%100), LastName: "Patient", Type: clinicpkg.UserMember, Status: clinicpkg.StatusActive,
					Active: true, Extra: map[string]any{}, Created: now - int64(size-i), Modified: now}
				if err := q.CreateUser(ctx, u); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		have += batch
	}
	return have, nil
}

// freshVisits is how many visits growVisits adds at the least, so that the
// first pages of every list are grown visits at every size. The other
// scenarios' visits (bookings with intakes, threads of messages) answer
// larger pages: a first size made of them cost 3 to 6 times a page of the
// grown clinic after it, which hid the growth the scenario is for.
const freshVisits = 1000

// growVisits adds visits until the clinic holds size, and at least
// freshVisits of them, and returns the id of the visit in the middle of
// those it added (the newest of the list: a page from the middle is a grown
// visit's page at every size too) and how many the clinic holds.
func growVisits(ctx context.Context, st *store.Store, accountID, roomID, pat0 int64, size int) (mid int64, have int, err error) {
	r := st.Read()
	acct := &clinicpkg.Account{ID: accountID}
	room := &clinicpkg.Room{ID: roomID}
	users := func(typ int) ([]*clinicpkg.User, error) {
		us, _, err := r.ListUsers(ctx, store.UserFilter{AccountID: acct.ID, Types: []int{typ}, Limit: 10000})
		if err == nil && len(us) == 0 {
			err = fmt.Errorf("no users of type %d", typ)
		}
		return us, err
	}
	pats, err := users(clinicpkg.UserMember)
	if err != nil {
		return 0, 0, err
	}
	provs, err := users(clinicpkg.UserProvider)
	if err != nil {
		return 0, 0, err
	}
	if err := st.DB().QueryRowContext(ctx, st.Rebind("SELECT COUNT(*) FROM visits WHERE account_id = ?"), acct.ID).Scan(&have); err != nil {
		return 0, 0, err
	}
	now := time.Now().Unix()
	size = max(size, have+freshVisits)
	added := size - have
	for have < size {
		batch := min(size-have, 5000)
		err = st.Tx(ctx, func(q *store.Q) error {
			for i := have; i < have+batch; i++ {
				v := &clinicpkg.Visit{AccountID: acct.ID, RoomID: room.ID, Kind: clinicpkg.KindAppointment, Type: clinicpkg.VisitVideo, Status: clinicpkg.VisitCompleted,
					MemberID: pats[i%len(pats)].ID, ProviderID: provs[i%len(provs)].ID,
					Created: now - int64(size-i), Modified: now - int64(size-i)}
				if i%10 == 0 {
					v.MemberID = pat0
				}
				if i%7 == 0 {
					v.Kind, v.Type, v.ProviderID, v.Status = clinicpkg.KindEconsult, clinicpkg.VisitEconsult, 0, clinicpkg.VisitPending
				} else if i%2 == 0 {
					v.Status = clinicpkg.VisitPending
				}
				v.Start, v.End = v.Created+86400, v.Created+86400+900
				if err := q.CreateVisit(ctx, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, 0, err
		}
		have += batch
	}
	err = st.DB().QueryRowContext(ctx, st.Rebind("SELECT id FROM visits WHERE account_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?"), acct.ID, added/2).Scan(&mid)
	return mid, have, err
}

// storeDSN is the database the server's store flags name.
func storeDSN(args []string) string {
	var dataDir, db string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--data-dir":
			dataDir = args[i+1]
		case "--database":
			db = args[i+1]
		}
	}
	if db != "" {
		return db
	}
	return filepath.Join(dataDir, "teleclinic.db")
}
