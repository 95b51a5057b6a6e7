package web

import (
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

type roomItem struct{ Name, Subtitle, Code, Address string }

type clinicPage struct {
	Name, Code string
	Rooms      []roomItem
	// Paged says this is not the first page of rooms; Pager links the
	// first and the next.
	Paged bool
	Pager pager
	// Missing is the room code a link named that the clinic has not: the
	// home is the way on, said so (404).
	Missing string
}

// clinicRoomsPage is how many rooms the clinic's home lists at a time.
const clinicRoomsPage = 50

// clinicHome is /u/{account_code}: the clinic's home with its public
// rooms by name, a page at a time (?from= is where a page starts among all
// the clinic's rooms).
func (s *Server) clinicHome(w http.ResponseWriter, r *http.Request) error {
	p, err := s.accountPrincipal(r, r.PathValue("account_code"))
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "No clinic has that address.")
	}
	return s.showClinicHome(w, r, p, http.StatusOK, "")
}

// showClinicHome draws the clinic's home; missing is the room a link
// named that it has not.
func (s *Server) showClinicHome(w http.ResponseWriter, r *http.Request, p *clinic.Principal, status int, missing string) error {
	f := queryFields(r)
	from := f.count("from", 0, 0)
	if err := f.Err(); err != nil {
		return err
	}
	rooms, next, err := s.app.PublicRooms(r.Context(), p, from, clinicRoomsPage)
	if err != nil {
		return err
	}
	page := clinicPage{Name: p.Account.Name, Code: p.Account.Code, Paged: from > 0, Missing: missing}
	page.Pager = pager{Label: tr("Rooms"), BackText: tr("The first rooms"), NextText: tr("More rooms")}.
		on("/u/"+url.PathEscape(p.Account.Code), "", "from", from > 0, int64(next), nil)
	for _, rm := range rooms {
		words := rm.WordsIn(s.localeOf(r).Tag.String())
		page.Rooms = append(page.Rooms, roomItem{Name: words.Name, Subtitle: words.Subtitle, Code: rm.Code, Address: roomBase(p.Account.Code, rm.Code)})
	}
	s.render(w, r, status, "clinic", page)
	return nil
}

type roomPage struct {
	Clinic, Name, Subtitle, Description string
	Closed                              bool
	ClosedMessage                       string
	Walkin, Appointments, Guests        bool
	SignedIn                            bool
	SignInURL                           string
	// Base is the room's address on this server, where its forms post.
	Base string
	// Error is what went wrong with the last form, in words.
	Error, Reason string
	// Questions are the room's own intake questions; Consent the text the
	// patient signs (nil: the plain agreement below).
	Questions []clinic.QuestionWords
	Consent   *clinic.ConsentText
	// AttachBytes is the most the form's files may weigh together (a
	// guest's quota is less): static/live.js says so before sending.
	AttachBytes int64
	// Guest: the signed-in caller is a guest, who gives an email to book
	// a time ahead (their session lasts hours); GuestEmail is the one
	// they gave.
	Guest      bool
	GuestEmail string
	// Texts: the clinic sends texts, so the guest may say yes to them.
	Texts bool
	// Languages the patient may prefer for the visit (those the clinic
	// has interpreters of first); PageLanguage names the page's own, the
	// form's default.
	Languages    []languageOption
	PageLanguage string
}

// room is the spec's room join URL, /c/{account_code}/{room_code} on a
// single-host deployment: the room as GET /rooms/{code} shows it to
// anyone with the clinic's code.
func (s *Server) room(w http.ResponseWriter, r *http.Request) error {
	p, err := s.accountPrincipal(r, r.PathValue("account_code"))
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "No clinic has that address.")
	}
	d, err := s.app.GetRoom(r.Context(), p, r.PathValue("room_code"))
	if clinic.ErrorCode(err) == clinic.ENotFound {
		// A mistyped or retired room's link: the clinic's rooms are the
		// way on.
		return s.showClinicHome(w, r, p, http.StatusNotFound, r.PathValue("room_code"))
	}
	if err != nil {
		return err
	}
	s.showRoom(w, r, p, d)
	return nil
}

// showRoom draws room d of the clinic p names.
func (s *Server) showRoom(w http.ResponseWriter, r *http.Request, p *clinic.Principal, d *app.RoomDetail) {
	st := d.Room.Settings
	// The room in the reader's language, where the clinic wrote it.
	words := d.Room.WordsIn(s.localeOf(r).Tag.String())
	page := roomPage{Clinic: p.Account.Name, Name: words.Name, Subtitle: words.Subtitle, Description: words.Description,
		Closed: d.IsClosedNow || !d.Room.Active, ClosedMessage: words.CloseMsg,
		Walkin: st.WalkinEnabled, Appointments: st.AppointmentEnabled, Guests: st.GuestLogin,
		SignInURL: "/signin?" + url.Values{"clinic": {p.Account.Code}, "next": {r.URL.Path}}.Encode(),
		Base:      "/c/" + url.PathEscape(p.Account.Code) + "/" + url.PathEscape(d.Room.Code),
		Questions: words.Questions, Consent: words.Consent}
	page.AttachBytes = maxIntakeBytes
	if me, err := s.principal(r); err == nil && me.Account.ID == p.Account.ID {
		page.SignedIn = true
		loc := s.localeOf(r)
		page.PageLanguage = app.Autonym(loc.Tag.String())
		// Without the clinic's own languages, the common ones still serve.
		kept, err := s.app.InterpreterLanguages(r.Context(), p)
		if err != nil {
			s.log.Warn("room: interpreter languages not read", "err", err)
		}
		page.Languages = languageOptions(loc.Tag, kept)
		if me.User.Type == clinic.UserGuest {
			page.AttachBytes = min(page.AttachBytes, s.app.GuestUploadBytes())
			page.Guest, page.GuestEmail = true, me.User.Email
			page.Texts = s.app.SendsTexts(r.Context(), p.Account.ID)
		}
	}
	s.render(w, r, http.StatusOK, "room", page)
}

// hostRoomRoute is the metrics' and the log's route of a join URL.
const hostRoomRoute = "GET {account_code}.{domain}/{room_code}"

var roomPathRE = regexp.MustCompile(`^/([A-Za-z0-9_-]{1,64})$`)

// hostRoom serves the join URL as the spec writes it,
// https://{account_code}.{domain}/{room_code}: a one-segment path on a host
// whose first label is a clinic's code and whose rest is the room's
// domain. It reports false, leaving the request to the API, for anything
// else.
func (s *Server) hostRoom(w http.ResponseWriter, r *http.Request) bool {
	m := roomPathRE.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodGet {
		return false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	account, domain, ok := strings.Cut(strings.ToLower(host), ".")
	if !ok || !strings.Contains(domain, ".") {
		return false
	}
	p, err := s.accountPrincipal(r, account)
	if err != nil {
		return false
	}
	d, err := s.app.GetRoom(r.Context(), p, m[1])
	if err != nil || !strings.EqualFold(d.Room.Domain, domain) {
		return false
	}
	s.securePage(w)
	s.showRoom(w, withPageState(r), p, d)
	return true
}

// guestJoin lets a guest in at a room that allows it (app.GuestJoin) and
// brings them back to the room, signed in.
func (s *Server) guestJoin(w http.ResponseWriter, r *http.Request) error {
	account, room := r.PathValue("account_code"), r.PathValue("room_code")
	p, err := s.accountPrincipal(r, account)
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "No clinic has that address.")
	}
	sess, err := s.app.GuestJoin(r.Context(), p, room, r.PostFormValue("first_name"), r.PostFormValue("last_name"))
	if err != nil {
		return err
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	http.Redirect(w, r, "/c/"+url.PathEscape(account)+"/"+url.PathEscape(room), http.StatusSeeOther)
	return nil
}
