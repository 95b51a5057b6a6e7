package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// userProfile is the full profile of GET /users/{id}, GET and POST /me.
type userProfile struct {
	ID            string         `json:"id"`
	Code          string         `json:"code"`
	Username      string         `json:"username"`
	FirstName     string         `json:"first_name"`
	LastName      string         `json:"last_name"`
	FullName      string         `json:"full_name"`
	SvcID         string         `json:"svcid"`
	DOB           string         `json:"dob"`
	Email         string         `json:"email"`
	Gender        int            `json:"gender"`
	Active        bool           `json:"active"`
	TOS           bool           `json:"tos"`
	Status        int            `json:"status"`
	Type          int            `json:"type"`
	Subtype       string         `json:"subtype"`
	Timezone      string         `json:"timezone"`
	EmailVerified bool           `json:"email_verified"`
	SignupStep    int            `json:"signup_step"`
	Nationality   string         `json:"nationality"`
	Photo         string         `json:"photo"`
	Phone         string         `json:"phone"`
	StreetAddr    string         `json:"street_addr"`
	City          string         `json:"city"`
	State         string         `json:"state"`
	Zip           string         `json:"zip"`
	PCPName       string         `json:"pcp_name"`
	PCPPhone      string         `json:"pcp_phone"`
	DisableEmails bool           `json:"disable_emails"`
	IsAdmin       bool           `json:"is_admin"`
	Roles         []string       `json:"roles"`
	Extra         map[string]any `json:"extra"`
	AccountCode   string         `json:"account_code"`
	Clinics       []string       `json:"clinics"`
	Account       accountInfo    `json:"account"`
	Rooms         []roomLink     `json:"rooms"`
	LastLogin     int64          `json:"last_login"`
	Created       int64          `json:"created"`
}

type accountInfo struct {
	ID     string `json:"id"`
	Code   string `json:"code"`
	Name   string `json:"name"`
	Domain string `json:"domain"`
}

// roomLink is a room as a user's profile lists it.
type roomLink struct {
	ID          string `json:"id"`
	Code        string `json:"code"`
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	AccountCode string `json:"account_code"`
	Domain      string `json:"domain"`
	Default     bool   `json:"default"`
	AddedTime   int64  `json:"added_time"`
	Source      string `json:"source"`
}

// extraKeys are the extended profile's fields (spec: User.extra); each is
// present in responses, empty when unset.
var extraKeys = []string{"marital_status", "gender_identity", "social_security_no", "veteran", "race", "ethnicity",
	"health_insurance", "insurance", "insurance_policy_number", "emerg_contact_name"}

func toProfile(p *app.Profile) userProfile {
	u := p.User
	extra := map[string]any{"attachments": []any{}}
	for _, k := range extraKeys {
		extra[k] = ""
	}
	for k, v := range u.Extra {
		extra[k] = v
	}
	rooms := make([]roomLink, 0, len(p.Rooms))
	for _, l := range p.Rooms {
		rooms = append(rooms, roomLink{ID: id(l.Room.ID), Code: l.Room.Code, Slug: l.Room.Slug, Name: l.Room.Name,
			AccountCode: p.Account.Code, Domain: l.Room.Domain, Default: l.Default, AddedTime: l.AddedTime, Source: l.Source})
	}
	roles := u.Roles
	if roles == nil {
		roles = []string{}
	}
	return userProfile{
		ID: id(u.ID), Code: u.Code, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName, FullName: u.FullName(),
		SvcID: u.SvcID, DOB: u.DOB, Email: u.Email, Gender: u.Gender, Active: u.Active, TOS: u.TOS, Status: u.Status,
		Type: u.Type, Subtype: u.Subtype, Timezone: u.Timezone, EmailVerified: u.EmailVerified, SignupStep: u.SignupStep,
		Nationality: u.Nationality, Photo: p.PhotoURL, Phone: u.Phone, StreetAddr: u.StreetAddr, City: u.City, State: u.State,
		Zip: u.Zip, PCPName: u.PCPName, PCPPhone: u.PCPPhone, DisableEmails: u.DisableEmails, IsAdmin: u.IsAdmin, Roles: roles,
		Extra: extra, AccountCode: p.Account.Code, Clinics: []string{p.Account.Code},
		Account: accountInfo{ID: id(p.Account.ID), Code: p.Account.Code, Name: p.Account.Name, Domain: p.Account.Domain},
		Rooms:   rooms, LastLogin: u.LastLogin, Created: u.Created,
	}
}

// userSummary is a user as GET /users lists it.
type userSummary struct {
	ID            string `json:"id"`
	Code          string `json:"code"`
	Username      string `json:"username"`
	FirstName     string `json:"first_name"`
	LastName      string `json:"last_name"`
	FullName      string `json:"full_name"`
	SvcID         string `json:"svcid"`
	Email         string `json:"email"`
	Type          int    `json:"type"`
	Subtype       string `json:"subtype"`
	Status        int    `json:"status"`
	Active        bool   `json:"active"`
	EmailVerified bool   `json:"email_verified"`
	IsAdmin       bool   `json:"is_admin"`
	IsHidden      bool   `json:"is_hidden"`
	AccountCode   string `json:"account_code"`
	LastLogin     int64  `json:"last_login"`
	Created       int64  `json:"created"`
}

// pick keeps only the fields the client asked for (the fields parameter).
func (u userSummary) pick(fields []string) map[string]any {
	out := map[string]any{}
	for _, f := range fields {
		switch f {
		case "id":
			out["id"] = u.ID
		case "username":
			out["username"] = u.Username
		case "first_name":
			out["first_name"] = u.FirstName
		case "last_name":
			out["last_name"] = u.LastName
		case "full_name":
			out["full_name"] = u.FullName
		case "last_login":
			out["last_login"] = u.LastLogin
		case "type":
			out["type"] = u.Type
		case "subtype":
			out["subtype"] = u.Subtype
		}
	}
	return out
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	// "-" is the caller, as wherever a user id is taken (spec: Conventions).
	vals := q.List("id")
	for i, v := range vals {
		if strings.TrimSpace(v) == "-" {
			vals[i] = strconv.FormatInt(c.p.UserID(), 10)
		}
	}
	ids, err := idList(vals, func(string) error {
		return clinic.Errorf(clinic.EInvalid, "id must be a number, - (yourself) or a comma-separated list of them.")
	})
	if err != nil {
		return err
	}
	in := app.UserListQuery{
		IDs: ids, FullName: q.Str("full_name"), Email: q.Str("email"), Q: q.Str("q"),
		Types: q.List("type"), Statuses: q.List("status"), Roles: q.List("role"), ExFilter: q.Str("ex_filter"),
		RoomCode: q.Str("room_code"), AccountCode: q.Str("account_code"), Group: q.Str("group"),
		Subtypes: q.List("subtype"), Sort: q.Str("sort"), Fields: q.List("fields"),
	}
	if in.IsHidden, err = q.Bool("is_hidden"); err != nil {
		return err
	}
	if in.IsAdmin, err = q.Bool("is_admin"); err != nil {
		return err
	}
	if in.Start, in.Limit, err = q.Paging(); err != nil {
		return err
	}
	if in.After, err = q.Int("after", 0); err != nil {
		return err
	}
	users, total, err := s.app.ListUsers(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	nextLink(w, r, "after", users.Next, "start")
	out := make([]any, 0, len(users.Items))
	for _, u := range users.Items {
		sum := userSummary{ID: id(u.ID), Code: u.Code, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName,
			FullName: u.FullName(), SvcID: u.SvcID, Email: u.Email, Type: u.Type, Subtype: u.Subtype, Status: u.Status,
			Active: u.Active, EmailVerified: u.EmailVerified, IsAdmin: u.IsAdmin, IsHidden: u.IsHidden,
			AccountCode: c.p.Account.Code, LastLogin: u.LastLogin, Created: u.Created}
		if len(in.Fields) > 0 {
			out = append(out, sum.pick(in.Fields))
		} else {
			out = append(out, sum)
		}
	}
	return okList(w, out, total)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, c *call) error {
	uid, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	prof, err := s.app.GetUser(r.Context(), c.p, uid, c.params.Str("user_photo_size"))
	if err != nil {
		return err
	}
	return ok(w, toProfile(prof))
}

func (s *Server) getMe(w http.ResponseWriter, r *http.Request, c *call) error {
	prof, err := s.app.GetUser(r.Context(), c.p, c.p.UserID(), c.params.Str("user_photo_size"))
	if err != nil {
		return err
	}
	return ok(w, toProfile(prof))
}

func (s *Server) updateMe(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.ProfileUpdate{
		FirstName: q.Opt("first_name"), LastName: q.Opt("last_name"), Password: q.Opt("password"),
		OldPassword: q.Opt("old_password"), DOB: q.Opt("dob"), Gender: q.Opt("gender"), Nationality: q.Opt("nationality"),
		TOS: q.Opt("tos"), Phone: q.Opt("phone"), StreetAddr: q.Opt("street_addr"), State: q.Opt("state"), Zip: q.Opt("zip"),
		City: q.Opt("city"), PCPName: q.Opt("pcp_name"), PCPPhone: q.Opt("pcp_phone"), Timezone: q.Opt("timezone"), Language: q.Opt("language"),
		Photo: q.Opt("photo"), StatesServiced: q.OptList("states_serviced"), Specialties: q.OptList("specialties"), NPI: q.Opt("npi"),
	}
	f, fh, err := uploadedFile(c, "photo")
	if err != nil {
		return err
	}
	if f != nil {
		defer f.Close()
		in.PhotoUpload, in.PhotoUploadName = f, fh.Filename
	}
	prof, err := s.app.UpdateMe(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	return ok(w, toProfile(prof))
}

func id(n int64) string { return strconv.FormatInt(n, 10) }

// inviteProvider is POST /users/invite (extension, admin): the provider's
// profile as GET /users/{id} gives it (status pending until they
// activate).
func (s *Server) inviteProvider(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.InviteInput{FirstName: q.Str("first_name"), LastName: q.Str("last_name"), Email: q.Str("email"), Title: q.Str("title")}
	if _, err := q.JSON("rooms", &in.Rooms); err != nil {
		in.Rooms = q.List("rooms")
	}
	u, err := s.app.InviteProvider(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	prof, err := s.app.GetUser(r.Context(), c.p, u.ID, "")
	if err != nil {
		return err
	}
	return ok(w, toProfile(prof))
}
