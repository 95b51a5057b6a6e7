package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Profile is a user with what the full profile shows beside it.
type Profile struct {
	User     *clinic.User
	Account  *clinic.Account
	Rooms    []clinic.RoomLink
	PhotoURL string
}

func (a *App) profile(ctx context.Context, acct *clinic.Account, u *clinic.User) (*Profile, error) {
	rooms, err := a.store.Read().UserRooms(ctx, acct.ID, u.ID)
	if err != nil {
		return nil, fmt.Errorf("profile rooms: %w", err)
	}
	return &Profile{User: u, Account: acct, Rooms: rooms, PhotoURL: a.photoURL(u, "")}, nil
}

var errUserNotFound = clinic.Errorf(clinic.ENotFound, "User not found.")

// GetUser is GET /users/{id}: the admin reads everyone in the clinic; anyone
// reads themself and the clinic's providers; a provider reads the patients
// they have visits with. Everything else is "not found", so a caller cannot
// learn who else is a patient.
func (a *App) GetUser(ctx context.Context, p *clinic.Principal, id int64, photoSize string) (*Profile, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	prof, err := a.getUser(ctx, p, id, photoSize)
	if err := a.AuditOutcome(ctx, p, "user.read", "user", i64s(id), err); err != nil {
		return nil, err
	}
	return prof, nil
}

func (a *App) getUser(ctx context.Context, p *clinic.Principal, id int64, photoSize string) (*Profile, error) {
	if photoSize != "" && !sizeRE.MatchString(photoSize) {
		return nil, clinic.Errorf(clinic.EInvalid, "user_photo_size must be WIDTHxHEIGHT, for example 200x200.")
	}
	// The caller's own row was read with their token in this request.
	u := p.User
	if u == nil || u.ID != id {
		var err error
		u, err = a.store.Read().UserByID(ctx, p.Account.ID, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errUserNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("get user: %w", err)
		}
	}
	ok, err := a.canReadUser(ctx, p, u)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errUserNotFound
	}
	prof, err := a.profile(ctx, p.Account, u)
	if err == nil && prof.PhotoURL != "" && photoSize != "" {
		prof.PhotoURL = a.photoURL(u, photoSize)
	}
	return prof, err
}

// canReadUser: the admin and the user read anyone's profile; a provider
// reads another provider's (colleagues) and their patients'; a patient or
// guest reads only the providers who serve them — of their visits, or of a
// room they filed an intake in or are linked to — since a profile holds an
// email and a phone. Everyone else is told the user does not exist.
func (a *App) canReadUser(ctx context.Context, p *clinic.Principal, u *clinic.User) (bool, error) {
	switch {
	case p.IsAdmin(), p.UserID() == u.ID:
		return true, nil
	case u.Type == clinic.UserProvider && p.User != nil && p.User.Type == clinic.UserProvider:
		return true, nil
	case u.Type == clinic.UserProvider && p.User != nil:
		return a.store.Read().ServesPatient(ctx, p.Account.ID, u.ID, p.User.ID)
	case p.User != nil && p.User.Type == clinic.UserProvider && (u.Type == clinic.UserMember || u.Type == clinic.UserGuest):
		return a.store.Read().HasVisitWith(ctx, p.Account.ID, p.User.ID, u.ID)
	}
	return false, nil
}

// UserListQuery is GET /users as the client sent it.
type UserListQuery struct {
	IDs         []int64
	FullName    string
	Email       string
	Q           string
	Types       []string
	Statuses    []string
	Roles       []string
	ExFilter    string
	IsHidden    *bool
	IsAdmin     *bool
	RoomCode    string
	AccountCode string
	Group       string
	Subtypes    []string
	Sort        string
	Start       int
	After       int64 // continue after this user (keyset); not with Start
	Limit       int   // 0 means the default
	Fields      []string
}

// Paging limits of GET /users.
const (
	DefaultUserLimit = 20
	MaxUserLimit     = 200
	MinSearchLen     = 3 // characters a name or email search needs
)

// ListFields are the names the fields parameter of GET /users may select.
var ListFields = map[string]bool{"id": true, "username": true, "first_name": true, "last_name": true,
	"full_name": true, "last_login": true, "type": true, "subtype": true}

// ListUsers is GET /users, for the clinic admin.
func (a *App) ListUsers(ctx context.Context, p *clinic.Principal, in UserListQuery) (clinic.Page[*clinic.User], int, error) {
	var none clinic.Page[*clinic.User]
	if err := RequireAdmin(p); err != nil {
		return none, 0, err
	}
	f, err := a.userFilter(p, in)
	if err != nil {
		return none, 0, err
	}
	if f == nil { // asked for another clinic: nothing of it is visible
		return clinic.Page[*clinic.User]{Items: []*clinic.User{}}, 0, a.Audit(ctx, p, "user.list", "user", "", OutcomeOK)
	}
	size := f.Limit
	f.Limit++
	users, total, err := a.store.Read().ListUsers(ctx, *f)
	if errors.Is(err, store.ErrNotFound) { // the after user
		return none, 0, clinic.Errorf(clinic.EInvalid, "after: user %d is not a user of this clinic.", f.After)
	}
	if err != nil {
		return none, 0, fmt.Errorf("list users: %w", err)
	}
	if err := a.Audit(ctx, p, "user.list", "user", "", OutcomeOK); err != nil {
		return none, 0, err
	}
	return clinic.PageOf(users, size, func(u *clinic.User) int64 { return u.ID }), total, nil
}

// SearchTooShort says whether a name or email search s is given but too
// short to run: under MinSearchLen characters once trimmed (blanks alone
// are too short).
func SearchTooShort(s string) bool {
	return s != "" && utf8.RuneCountInString(strings.TrimSpace(s)) < MinSearchLen
}

func (a *App) userFilter(p *clinic.Principal, in UserListQuery) (*store.UserFilter, error) {
	for name, v := range map[string]string{"full_name": in.FullName, "email": in.Email, "q": in.Q} {
		if SearchTooShort(v) {
			return nil, clinic.Errorf(clinic.EInvalid, "%s must be at least %d characters.", name, MinSearchLen)
		}
	}
	if in.AccountCode != "" && in.AccountCode != p.Account.Code {
		return nil, nil
	}
	f := &store.UserFilter{AccountID: p.Account.ID, FullName: strings.TrimSpace(in.FullName), Email: strings.TrimSpace(in.Email),
		Q: strings.TrimSpace(in.Q), Roles: in.Roles, Subtypes: in.Subtypes, IsHidden: in.IsHidden, IsAdmin: in.IsAdmin,
		RoomCode: in.RoomCode, Group: in.Group, Start: in.Start, After: in.After, Limit: in.Limit}
	var err error
	f.IDs = in.IDs
	if f.Types, err = parseInts[int]("type", in.Types); err != nil {
		return nil, err
	}
	if f.Statuses, err = parseInts[int]("status", in.Statuses); err != nil {
		return nil, err
	}
	switch in.ExFilter {
	case "":
	case "all":
		f.InAnyRoom = true
	case "my-patient":
		f.PatientOf = p.UserID()
		f.Types = []int{clinic.UserMember, clinic.UserGuest}
	default:
		return nil, clinic.Errorf(clinic.EInvalid, "ex_filter must be all or my-patient.")
	}
	if in.Sort != "" {
		col, dir, _ := strings.Cut(in.Sort, ".")
		if !store.UserSortable(col) || (dir != "" && dir != "asc" && dir != "desc") {
			return nil, clinic.Errorf(clinic.EInvalid, "sort must be a field and a direction, for example full_name.asc.")
		}
		f.SortCol, f.Desc = col, dir == "desc"
	}
	for _, fl := range in.Fields {
		if !ListFields[fl] {
			return nil, clinic.Errorf(clinic.EInvalid, "fields may only name id, username, first_name, last_name, full_name, last_login, type, subtype.")
		}
	}
	if f.Start < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "start must not be negative.")
	}
	if f.After < 0 || (f.After > 0 && f.Start > 0) {
		return nil, clinic.Errorf(clinic.EInvalid, "after must be the id of the last user of the page before, and not given with start.")
	}
	switch {
	case f.Limit < 0:
		return nil, clinic.Errorf(clinic.EInvalid, "limit must not be negative.")
	case f.Limit == 0:
		f.Limit = DefaultUserLimit
	case f.Limit > MaxUserLimit:
		f.Limit = MaxUserLimit
	}
	return f, nil
}

func parseInts[T int | int64](name string, in []string) ([]T, error) {
	var out []T
	for _, s := range in {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, clinic.Errorf(clinic.EInvalid, "%s must be a number or a comma-separated list of numbers.", name)
		}
		out = append(out, T(n))
	}
	return out, nil
}

// SSOInput is the body of POST /users/sso.
type SSOInput struct {
	FirstName, LastName string
	Type                int
	Code                string
	DOB                 string
	Email, Username     string
	DisableEmails       bool
	Gender              string
	StreetAddr, City    string
	State, Zip, Phone   string
	WithVideo           bool // fields=vsee
}

// SSOResult is a user logged in by SSO.
type SSOResult struct {
	Profile *Profile
	Session *Session
	Video   *VideoIdentity
	Created bool
}

// VideoIdentity is what the browser call SDK needs (fields=vsee): the
// user's video identity and a token the configured media service accepts.
type VideoIdentity struct {
	ID    string
	Token string
}

// MaxCodeLen is the longest user code SSO accepts.
const MaxCodeLen = 128

// FeatureERx is the account feature that makes SSO require what
// e-prescribing needs of a patient.
const FeatureERx = "erx"

// SSO is POST /users/sso: the first call with a code creates the user, later
// calls log the same user in. Guests (600) are created anew each time.
func (a *App) SSO(ctx context.Context, p *clinic.Principal, in SSOInput) (*SSOResult, error) {
	if err := requireAPIKey(p); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		res, err := a.sso(ctx, p, in)
		// A concurrent request created the same code first: the next try
		// finds that user and logs it in.
		if errors.Is(err, store.ErrConflict) && in.Type != clinic.UserGuest && try < 3 {
			continue
		}
		return res, err
	}
}

func (a *App) sso(ctx context.Context, p *clinic.Principal, in SSOInput) (*SSOResult, error) {
	if !p.Account.SSOEnabled {
		return nil, clinic.Errorf(clinic.EForbidden, "Single sign-on is disabled for this account; the clinic operator must enable it.")
	}
	return a.signInUser(ctx, p, in, "user.sso", nil)
}

// signInUser finds or makes the user in describes (a guest is always new)
// and starts a login for them, audited as action.
// also, when set, runs in the same transaction once the user exists: what
// else the sign-in makes true, all or nothing.
func (a *App) signInUser(ctx context.Context, p *clinic.Principal, in SSOInput, action string, also func(q *store.Q, u *clinic.User) error) (*SSOResult, error) {
	u, err := a.validateSSO(p.Account, in)
	if err != nil {
		return nil, err
	}
	res := &SSOResult{}
	candidate := *u
	err = a.store.Tx(ctx, func(q *store.Q) error {
		// Start each attempt from the validated input: a rolled-back attempt
		// may have given u an id that no longer exists.
		fresh := candidate
		u, res.Created = &fresh, false
		if in.Type != clinic.UserGuest {
			existing, err := q.UserByCode(ctx, p.Account.ID, in.Code)
			switch {
			case err == nil:
				if existing.Type != in.Type {
					return clinic.Errorf(clinic.EInvalid, "code %q already belongs to a user of type %d.", in.Code, existing.Type)
				}
				u = existing
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		if u.ID == 0 {
			if err := a.createUser(ctx, q, u, in.Username != ""); err != nil {
				return err
			}
			res.Created = true
		}
		if u.Status == clinic.StatusDisabled || !u.Active {
			return clinic.Errorf(clinic.EForbidden, "This user is disabled.")
		}
		s, err := a.issueSession(ctx, q, u, "")
		if err != nil {
			return err
		}
		res.Session = s
		u.LastLogin = a.Unix()
		if err := q.TouchLogin(ctx, u.AccountID, u.ID, u.LastLogin); err != nil {
			return err
		}
		pp := *p
		pp.User = u
		if also != nil {
			if err := also(q, u); err != nil {
				return err
			}
		}
		return a.AuditIn(ctx, q, &pp, action, "user", i64s(u.ID), OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, err
	}
	if err != nil {
		return nil, StoreErr("sso", err, "")
	}
	if res.Profile, err = a.profile(ctx, p.Account, u); err != nil {
		return nil, err
	}
	if in.WithVideo {
		if res.Video, err = a.videoIdentityToken(u, res.Session); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// createUser inserts u with a generated username (unless given) and video
// identity. The username is checked before the insert: on PostgreSQL a failed
// INSERT aborts the transaction, so a conflict cannot be inspected after it.
// A conflict that still happens is a race on the code and is returned as
// store.ErrConflict for the caller to retry outside the transaction.
func (a *App) createUser(ctx context.Context, q *store.Q, u *clinic.User, usernameGiven bool) error {
	for try := 0; ; try++ {
		if !usernameGiven {
			u.Username = genUsername(u.FirstName, u.LastName)
		}
		taken, err := q.UsernameTaken(ctx, u.AccountID, u.Username)
		if err != nil {
			return err
		}
		if !taken {
			break
		}
		if usernameGiven {
			return clinic.Errorf(clinic.EInvalid, "username %q is already taken.", u.Username)
		}
		if try == 5 {
			return fmt.Errorf("create user: no free username for %q", u.Username)
		}
	}
	u.SvcID = "tc" + RandomHex(10)
	if err := q.CreateUser(ctx, u); err != nil {
		return err
	}
	return a.Emit(ctx, q, u.AccountID, EventUserCreated, UserHook{UserID: i64s(u.ID), Type: u.Type, Code: u.Code})
}

var nonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

func genUsername(first, last string) string {
	base := nonAlnum.ReplaceAllString(strings.ToLower(first+last), "")
	if len(base) > 20 {
		base = base[:20]
	}
	if base == "" {
		base = "user"
	}
	return base + "." + RandomHex(3)
}

func (a *App) validateSSO(acct *clinic.Account, in SSOInput) (*clinic.User, error) {
	if err := CheckFields(Line("first_name", in.FirstName, MaxNameChars), Line("last_name", in.LastName, MaxNameChars),
		Line("code", in.Code, MaxCodeChars), Line("username", in.Username, MaxCodeChars), Line("email", in.Email, MaxLineChars),
		Line("dob", in.DOB, 32), Line("gender", in.Gender, 16), Line("street_addr", in.StreetAddr, MaxLineChars),
		Line("city", in.City, MaxNameChars), Line("state", in.State, 32), Line("zip", in.Zip, 32), Line("phone", in.Phone, 32)); err != nil {
		return nil, err
	}
	var missing []string
	if strings.TrimSpace(in.FirstName) == "" {
		missing = append(missing, "first_name")
	}
	if strings.TrimSpace(in.LastName) == "" {
		missing = append(missing, "last_name")
	}
	if in.Type == 0 {
		missing = append(missing, "type")
	}
	if len(missing) > 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "Missing required fields: %s.", strings.Join(missing, ", "))
	}
	switch in.Type {
	case clinic.UserMember, clinic.UserProvider:
		if in.Code == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "code is required for type %d.", in.Type)
		}
	case clinic.UserGuest:
		in.Code = RandomHex(16)
	default:
		return nil, clinic.Errorf(clinic.EInvalid, "type must be 200, 400 or 600.")
	}
	if len([]rune(in.Code)) > MaxCodeLen {
		return nil, clinic.Errorf(clinic.EInvalid, "code must be at most %d characters.", MaxCodeLen)
	}
	now := a.Unix()
	u := &clinic.User{AccountID: acct.ID, Code: in.Code, Username: strings.TrimSpace(in.Username),
		FirstName: strings.TrimSpace(in.FirstName), LastName: strings.TrimSpace(in.LastName),
		Email: strings.TrimSpace(in.Email), Type: in.Type, Status: clinic.StatusActive, Active: true,
		DisableEmails: in.DisableEmails, StreetAddr: in.StreetAddr, City: in.City, Zip: in.Zip, Phone: in.Phone,
		Extra: map[string]any{}, Created: now, Modified: now}
	var err error
	if u.DOB, err = a.checkDOB(in.DOB); err != nil {
		return nil, err
	}
	if u.Gender, err = parseGender(in.Gender); err != nil {
		return nil, err
	}
	if u.State, err = checkState(in.State); err != nil {
		return nil, err
	}
	if u.Email != "" && !emailRE.MatchString(u.Email) {
		return nil, clinic.Errorf(clinic.EInvalid, "email is not a valid address.")
	}
	if in.Type == clinic.UserMember && hasFeature(acct, FeatureERx) {
		var need []string
		for name, v := range map[string]string{"gender": in.Gender, "street_addr": in.StreetAddr, "city": in.City,
			"state": in.State, "zip": in.Zip, "phone": in.Phone, "dob": in.DOB} {
			if strings.TrimSpace(v) == "" {
				need = append(need, name)
			}
		}
		if len(need) > 0 {
			slices.Sort(need)
			return nil, clinic.Errorf(clinic.EInvalid, "E-prescribing is enabled for this clinic: a patient needs %s.", strings.Join(need, ", "))
		}
	}
	return u, nil
}

func hasFeature(acct *clinic.Account, f string) bool {
	for _, x := range acct.Features {
		if x == f {
			return true
		}
	}
	return false
}

var (
	sizeRE  = regexp.MustCompile(`^[1-9][0-9]{0,4}x[1-9][0-9]{0,4}$`)
	emailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	stateRE = regexp.MustCompile(`^[A-Za-z]{2}$`)
)

func (a *App) checkDOB(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		return "", clinic.Errorf(clinic.EInvalid, "dob must be a date in the form YYYY-MM-DD.")
	}
	if d.After(a.now()) || d.Year() < 1900 {
		return "", clinic.Errorf(clinic.EInvalid, "dob must be a past date after 1900.")
	}
	return s, nil
}

func parseGender(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return clinic.GenderUnknown, nil
	case "male", "m", "1":
		return clinic.GenderMale, nil
	case "female", "f", "2":
		return clinic.GenderFemale, nil
	}
	return 0, clinic.Errorf(clinic.EInvalid, "gender must be male or female.")
}

func checkState(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if !stateRE.MatchString(s) {
		return "", clinic.Errorf(clinic.EInvalid, "state must be a two-letter abbreviation.")
	}
	return strings.ToUpper(s), nil
}

// ProfileUpdate is POST /me. A nil field is left as it is.
type ProfileUpdate struct {
	FirstName, LastName, Password, OldPassword, DOB, Gender, Nationality, TOS,
	Phone, StreetAddr, State, Zip, City, PCPName, PCPPhone, Timezone, Photo *string
	// Language is the language the clinic writes to the user in (its
	// emails): a tag the portal speaks, "" for the default (extension).
	Language *string
	// Providers only: what availability searches match (extension).
	StatesServiced, Specialties *[]string
	// NPI is a provider's National Provider Identifier, for their claims
	// and superbills (extension; "" removes it).
	NPI *string
	// PhotoUpload is a picture sent as the photo part of a multipart POST
	// /me: it becomes a user_avatar file of the user and their photo.
	PhotoUpload     io.Reader
	PhotoUploadName string
}

// UpdateMe is POST /me. Only the fields listed by the spec can change; a
// user's type, status, clinic, code and email verification cannot.
func (a *App) UpdateMe(ctx context.Context, p *clinic.Principal, in ProfileUpdate) (*Profile, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, p.UserID())
	if err != nil {
		return nil, StoreErr("update me", err, "User not found.")
	}
	if in.PhotoUpload != nil {
		f, err := a.UploadFile(ctx, p, FileUpload{Body: in.PhotoUpload, Name: in.PhotoUploadName, Category: CategoryUserAvatar})
		if err != nil {
			return nil, err
		}
		id := i64s(f.ID)
		in.Photo = &id
	}
	next := *u
	if err := a.applyProfile(ctx, p, &next, in); err != nil {
		return nil, a.AuditOutcome(ctx, p, "user.update", "user", i64s(u.ID), err)
	}
	next.Modified = a.Unix()
	passwordChanged := next.PasswordHash != u.PasswordHash
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UpdateProfile(ctx, &next); err != nil {
			return err
		}
		if passwordChanged {
			// A new password ends the user's other logins, keeping this one.
			keep := ""
			if p.TokenID != 0 {
				var err error
				if keep, err = q.TokenFamily(ctx, p.Account.ID, p.TokenID); err != nil {
					return err
				}
			}
			if err := q.RevokeUserTokensExcept(ctx, p.Account.ID, u.ID, keep, next.Modified); err != nil {
				return err
			}
		}
		return a.AuditIn(ctx, q, p, "user.update", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("update me", err, "User not found.")
	}
	return a.profile(ctx, p.Account, &next)
}

// applyProfile checks and applies the profile's fields, each given in
// turn: a flat field list (its cyclomatic count is its fields').
func (a *App) applyProfile(ctx context.Context, p *clinic.Principal, u *clinic.User, in ProfileUpdate) error {
	err := CheckFields(optLine("first_name", in.FirstName, MaxNameChars), optLine("last_name", in.LastName, MaxNameChars),
		optLine("dob", in.DOB, 32), optLine("gender", in.Gender, 16), optLine("nationality", in.Nationality, MaxNameChars),
		optLine("tos", in.TOS, 8), optLine("phone", in.Phone, 32), optLine("street_addr", in.StreetAddr, MaxLineChars),
		optLine("state", in.State, 32), optLine("zip", in.Zip, 32), optLine("city", in.City, MaxNameChars),
		optLine("pcp_name", in.PCPName, MaxNameChars), optLine("pcp_phone", in.PCPPhone, 32), optLine("timezone", in.Timezone, 64),
		optLine("photo", in.Photo, 32), optLine("password", in.Password, 256), optLine("old_password", in.OldPassword, 256))
	if err != nil {
		return err
	}
	for _, l := range []*[]string{in.StatesServiced, in.Specialties} {
		if l == nil {
			continue
		}
		if len(*l) > 100 {
			return clinic.Errorf(clinic.EInvalid, "states_serviced and specialties take at most 100 entries.")
		}
		for _, s := range *l {
			if err := CheckFields(Line("states_serviced and specialties entries", s, MaxNameChars)); err != nil {
				return err
			}
		}
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	set(&u.FirstName, in.FirstName)
	set(&u.LastName, in.LastName)
	set(&u.Nationality, in.Nationality)
	set(&u.Phone, in.Phone)
	set(&u.StreetAddr, in.StreetAddr)
	set(&u.Zip, in.Zip)
	set(&u.City, in.City)
	set(&u.PCPName, in.PCPName)
	if in.FirstName != nil && u.FirstName == "" {
		return clinic.Errorf(clinic.EInvalid, "first_name cannot be empty.")
	}
	if in.LastName != nil && u.LastName == "" {
		return clinic.Errorf(clinic.EInvalid, "last_name cannot be empty.")
	}

	if in.DOB != nil {
		if u.DOB, err = a.checkDOB(*in.DOB); err != nil {
			return err
		}
	}
	if in.Gender != nil {
		g := strings.ToLower(strings.TrimSpace(*in.Gender))
		if g != "male" && g != "female" && g != "1" && g != "2" {
			return clinic.Errorf(clinic.EInvalid, "gender must be male or female.")
		}
		u.Gender, _ = parseGender(g)
	}
	if in.State != nil {
		if u.State, err = checkState(*in.State); err != nil {
			return err
		}
	}
	if in.TOS != nil {
		switch strings.ToLower(strings.TrimSpace(*in.TOS)) {
		case "1", "true":
			u.TOS = true
		case "0", "false":
			u.TOS = false
		default:
			return clinic.Errorf(clinic.EInvalid, "tos must be 0 or 1.")
		}
	}
	if in.PCPPhone != nil {
		digits := strings.NewReplacer(" ", "", "-", "", "(", "", ")", "", ".", "").Replace(strings.TrimSpace(*in.PCPPhone))
		if digits != "" && !tenDigits.MatchString(digits) {
			return clinic.Errorf(clinic.EInvalid, "pcp_phone must be 10 digits.")
		}
		u.PCPPhone = digits
	}
	if in.Timezone != nil {
		tz := strings.TrimSpace(*in.Timezone)
		if tz != "" {
			if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
				return clinic.Errorf(clinic.EInvalid, "timezone must be an IANA time zone name, for example America/New_York.")
			}
		}
		u.Timezone = tz
	}
	if in.Language != nil {
		tag := strings.TrimSpace(*in.Language)
		if tag != "" && a.cfg.Locales.Get(tag) == nil {
			var tags []string
			for _, l := range a.cfg.Locales.All() {
				tags = append(tags, l.Tag.String())
			}
			return clinic.Errorf(clinic.EInvalid, "language must be one the clinic writes in: %s.", strings.Join(tags, ", "))
		}
		if u.Extra == nil {
			u.Extra = map[string]any{}
		}
		if tag == "" {
			delete(u.Extra, "language")
		} else {
			u.Extra["language"] = tag
		}
	}
	if in.Photo != nil {
		if err := a.checkPhoto(ctx, p, u, strings.TrimSpace(*in.Photo)); err != nil {
			return err
		}
	}
	if in.NPI != nil {
		if err := applyNPI(u, *in.NPI); err != nil {
			return err
		}
	}
	if in.StatesServiced != nil || in.Specialties != nil {
		if err := applyProviderLists(u, in); err != nil {
			return err
		}
	}
	if in.Password != nil || in.OldPassword != nil {
		return a.changePassword(ctx, u, in)
	}
	return nil
}

// applyProviderLists sets a provider's states serviced and specialties
// (extra.states_serviced, extra.specialties).
func applyProviderLists(u *clinic.User, in ProfileUpdate) error {
	if u.Type != clinic.UserProvider {
		return clinic.Errorf(clinic.EInvalid, "states_serviced and specialties are for providers.")
	}
	u.Extra = maps.Clone(u.Extra)
	if in.StatesServiced != nil {
		states := []any{}
		for _, st := range *in.StatesServiced {
			st, err := checkState(st)
			if err != nil || st == "" {
				return clinic.Errorf(clinic.EInvalid, "states_serviced holds two-letter state codes.")
			}
			states = append(states, st)
		}
		u.Extra["states_serviced"] = states
	}
	if in.Specialties != nil {
		specs := []any{}
		for _, sp := range *in.Specialties {
			specs = append(specs, sp)
		}
		u.Extra["specialties"] = specs
	}
	return nil
}

var tenDigits = regexp.MustCompile(`^[0-9]{10}$`)

// applyNPI sets provider u's NPI (extra.npi): ten digits whose last is
// the Luhn check digit of the others behind the prefix 80840, as CMS
// issues them; "" removes it.
func applyNPI(u *clinic.User, npi string) error {
	if u.Type != clinic.UserProvider {
		return clinic.Errorf(clinic.EInvalid, "npi is for providers.")
	}
	npi = strings.TrimSpace(npi)
	u.Extra = maps.Clone(u.Extra)
	if u.Extra == nil {
		u.Extra = map[string]any{}
	}
	if npi == "" {
		delete(u.Extra, "npi")
		return nil
	}
	if !ValidNPI(npi) {
		return clinic.Errorf(clinic.EInvalid, "npi must be a National Provider Identifier: ten digits, the last its check digit.")
	}
	u.Extra["npi"] = npi
	return nil
}

// ValidNPI says whether npi is ten digits whose last is the Luhn check
// digit of "80840" and the nine before it.
func ValidNPI(npi string) bool {
	if !tenDigits.MatchString(npi) {
		return false
	}
	digits := "80840" + npi[:9]
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if (len(digits)-1-i)%2 == 0 { // the rightmost, and every other: doubled
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return int(npi[9]-'0') == (10-sum%10)%10
}

// ProviderNPI is provider u's NPI ("" when not given).
func ProviderNPI(u *clinic.User) string {
	if u == nil {
		return ""
	}
	s, _ := u.Extra["npi"].(string)
	return s
}

// checkPhoto accepts a file of the clinic that the user uploaded or that
// targets them; an empty id removes the photo.
func (a *App) checkPhoto(ctx context.Context, p *clinic.Principal, u *clinic.User, id string) error {
	if id == "" {
		u.PhotoFileID = ""
		return nil
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return clinic.Errorf(clinic.EInvalid, "photo must be a file id from POST /files.")
	}
	f, err := a.store.Read().FileByID(ctx, p.Account.ID, n)
	if errors.Is(err, store.ErrNotFound) || (err == nil && f.CreatorUserID != u.ID && !(f.TargetType == "user" && f.TargetID == u.ID)) {
		return clinic.Errorf(clinic.EInvalid, "photo must be a file id from POST /files that belongs to you.")
	}
	if err != nil {
		return fmt.Errorf("photo: %w", err)
	}
	u.PhotoFileID = id
	return nil
}

func (a *App) changePassword(ctx context.Context, u *clinic.User, in ProfileUpdate) error {
	if in.Password == nil || *in.Password == "" {
		return clinic.Errorf(clinic.EInvalid, "password is required with old_password.")
	}
	if err := checkPassword(*in.Password); err != nil {
		return err
	}
	if u.PasswordHash != "" {
		if in.OldPassword == nil || *in.OldPassword == "" {
			return clinic.Errorf(clinic.EInvalid, "old_password is required to change a password.")
		}
		ok, err := a.verifyPassword(ctx, u.PasswordHash, *in.OldPassword)
		if err != nil {
			return err
		}
		if !ok {
			return clinic.Errorf(clinic.EInvalid, "old_password is not correct.")
		}
	}
	h, err := a.hashPassword(ctx, *in.Password)
	if err != nil {
		return err
	}
	u.PasswordHash = h
	return nil
}

func i64s(n int64) string { return strconv.FormatInt(n, 10) }

// photoURL is the view link of u's photo, or "" when u has none. The
// photo's file id is kept as the text the profile's photo field holds.
func (a *App) photoURL(u *clinic.User, size string) string {
	id, err := strconv.ParseInt(u.PhotoFileID, 10, 64)
	if err != nil || id <= 0 {
		return ""
	}
	return a.FileViewURL(id, size)
}

// videoIdentityToken is SSO's fields=vsee: the user's video identity and
// a token of the media service that carries calls. With LiveKit it is a
// LiveKit token naming the user, valid as long as an access token; it
// joins no room (each visit's page is given a token of its own room, so a
// token never opens another visit's call). In peer-to-peer mode Teleclinic
// itself is the media service, and what it accepts is this login's access
// token (GET /auth?sso_token= opens the visit page with it).
func (a *App) videoIdentityToken(u *clinic.User, s *Session) (*VideoIdentity, error) {
	out := &VideoIdentity{ID: u.SvcID, Token: s.Token}
	if lk := a.cfg.LiveKit; lk.Enabled() {
		var err error
		if out.Token, err = lk.IdentityToken(u.VideoID(), u.FullName(), a.cfg.UserTokenMax); err != nil {
			return nil, err
		}
	}
	return out, nil
}
