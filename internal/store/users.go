package store

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"teleclinic/internal/clinic"
)

const userCols = `u.id, u.account_id, u.code, u.username, u.first_name, u.last_name, u.email, u.password_hash, u.dob, u.gender,
	u.type, u.subtype, u.status, u.active, u.tos, u.timezone, u.email_verified, u.signup_step, u.svcid, u.nationality,
	u.phone, u.street_addr, u.city, u.state, u.zip, u.pcp_name, u.pcp_phone, u.photo_file_id, u.extra, u.disable_emails,
	u.is_hidden, u.is_admin, u.roles, u.user_group, u.last_login, u.created, u.modified, u.version`

func scanUser(sc interface{ Scan(...any) error }) (*clinic.User, error) {
	var u clinic.User
	var active, tos, ev, de, hidden, admin int
	var photo *int64
	var extra, roles string
	err := sc.Scan(&u.ID, &u.AccountID, &u.Code, &u.Username, &u.FirstName, &u.LastName, &u.Email, &u.PasswordHash, &u.DOB, &u.Gender,
		&u.Type, &u.Subtype, &u.Status, &active, &tos, &u.Timezone, &ev, &u.SignupStep, &u.SvcID, &u.Nationality,
		&u.Phone, &u.StreetAddr, &u.City, &u.State, &u.Zip, &u.PCPName, &u.PCPPhone, &photo, &extra, &de,
		&hidden, &admin, &roles, &u.Group, &u.LastLogin, &u.Created, &u.Modified, &u.Version)
	if err != nil {
		return nil, err
	}
	u.Active, u.TOS, u.EmailVerified, u.DisableEmails, u.IsHidden, u.IsAdmin = active == 1, tos == 1, ev == 1, de == 1, hidden == 1, admin == 1
	if photo != nil {
		u.PhotoFileID = i64s(*photo)
	}
	if err := json.Unmarshal([]byte(extra), &u.Extra); err != nil || u.Extra == nil {
		u.Extra = map[string]any{}
	}
	if roles != "" {
		u.Roles = strings.Split(roles, ",")
	}
	return &u, nil
}

func (q *Q) users(ctx context.Context, query string, args ...any) ([]*clinic.User, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*clinic.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, u)
	}
	return out, q.d.translate(rows.Err())
}

func (q *Q) user(ctx context.Context, where string, args ...any) (*clinic.User, error) {
	us, err := q.users(ctx, "SELECT "+userCols+" FROM users u WHERE "+where, args...)
	if err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, ErrNotFound
	}
	return us[0], nil
}

// UserByID finds a user of the clinic.
func (q *Q) UserByID(ctx context.Context, accountID, id int64) (*clinic.User, error) {
	return q.user(ctx, "u.account_id = ? AND u.id = ?", accountID, id)
}

// UserByCode finds a user of the clinic by the caller-supplied code.
func (q *Q) UserByCode(ctx context.Context, accountID int64, code string) (*clinic.User, error) {
	return q.user(ctx, "u.account_id = ? AND u.code = ?", accountID, code)
}

// UserByLogin finds a user of the clinic by username, or by email when no
// username matches. Emails compare case-insensitively.
func (q *Q) UserByLogin(ctx context.Context, accountID int64, login string) (*clinic.User, error) {
	u, err := q.user(ctx, "u.account_id = ? AND u.username = ?", accountID, login)
	if err != ErrNotFound {
		return u, err
	}
	// A guest's email (given to come back to a booked visit) is never a
	// login: it names no account, and must not shadow a patient's.
	return q.user(ctx, "u.account_id = ? AND lower(u.email) = lower(?) AND u.email <> '' AND u.type <> ? ORDER BY u.id", accountID, login, clinic.UserGuest)
}

// AdminUser returns the clinic's admin user, the identity of its admin token.
func (q *Q) AdminUser(ctx context.Context, accountID int64) (*clinic.User, error) {
	return q.user(ctx, "u.account_id = ? AND u.type = ? ORDER BY u.id", accountID, clinic.UserAdmin)
}

// UserNames returns the full names of the clinic's users among ids; a user
// that is gone has no entry.
func (q *Q) UserNames(ctx context.Context, accountID int64, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT id, COALESCE(first_name, ''), COALESCE(last_name, '') FROM users WHERE account_id = ? AND "+inList("id", len(ids)),
		append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var u clinic.User
		if err := rows.Scan(&id, &u.FirstName, &u.LastName); err != nil {
			return nil, q.d.translate(err)
		}
		out[id] = u.FullName()
	}
	return out, q.d.translate(rows.Err())
}

// CreateUser inserts a user; a duplicate code, username or svcid is ErrConflict.
func (q *Q) CreateUser(ctx context.Context, u *clinic.User) error {
	extra, _ := json.Marshal(u.Extra)
	id, err := q.insert(ctx, `INSERT INTO users (account_id, code, username, first_name, last_name, email, password_hash, dob, gender,
		type, subtype, status, active, tos, timezone, email_verified, signup_step, svcid, nationality,
		phone, street_addr, city, state, zip, pcp_name, pcp_phone, photo_file_id, extra, disable_emails,
		is_hidden, is_admin, roles, user_group, last_login, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.AccountID, u.Code, u.Username, u.FirstName, u.LastName, u.Email, u.PasswordHash, u.DOB, u.Gender,
		u.Type, u.Subtype, u.Status, b2i(u.Active), b2i(u.TOS), u.Timezone, b2i(u.EmailVerified), u.SignupStep, u.SvcID, u.Nationality,
		u.Phone, u.StreetAddr, u.City, u.State, u.Zip, u.PCPName, u.PCPPhone, nullID(u.PhotoFileID), string(extra), b2i(u.DisableEmails),
		b2i(u.IsHidden), b2i(u.IsAdmin), strings.Join(u.Roles, ","), u.Group, u.LastLogin, u.Created, u.Modified)
	u.ID = id
	return err
}

// SetPassword stores a new password hash and, for activation, the status.
func (q *Q) SetPassword(ctx context.Context, accountID, userID int64, hash string, status int, verified bool, now int64) error {
	if err := q.mustAffect(ctx, `UPDATE users SET password_hash = ?, status = ?, active = 1, email_verified = ?, modified = ?
		WHERE account_id = ? AND id = ?`, hash, status, b2i(verified), now, accountID, userID); err != nil {
		return err
	}
	return q.credentialsEnded(ctx)
}

// TouchLogin records a successful login.
func (q *Q) TouchLogin(ctx context.Context, accountID, userID, now int64) error {
	return q.mustAffect(ctx, "UPDATE users SET last_login = ? WHERE account_id = ? AND id = ?", now, accountID, userID)
}

// UserFilter selects users of one clinic. Zero values do not filter.
type UserFilter struct {
	AccountID int64
	IDs       []int64
	FullName  string // substring, case-insensitive
	Email     string // substring, case-insensitive
	Q         string // substring of full name or email
	Types     []int
	Statuses  []int
	Roles     []string // any of
	Subtypes  []string
	IsHidden  *bool
	IsAdmin   *bool
	RoomCode  string
	InAnyRoom bool  // linked to at least one room
	PatientOf int64 // patients with a visit with this provider
	Group     string
	SortCol   string // one of the keys of userSortCols
	Desc      bool
	Start     int
	// After continues the list after this user (keyset): the page starts
	// past the user's place in the order, wherever they are, so a page
	// costs the same at any depth, where Start's offset reads every row
	// before it. A user not of the clinic is ErrNotFound.
	After int64
	Limit int
}

var userSortCols = map[string]string{
	"id": "u.id", "full_name": "lower(trim(u.first_name || ' ' || u.last_name))", "first_name": "lower(u.first_name)",
	"last_name": "lower(u.last_name)", "email": "lower(u.email)", "username": "u.username", "created": "u.created",
	"last_login": "u.last_login", "type": "u.type",
}

// UserSortable reports whether ListUsers can sort by col.
func UserSortable(col string) bool { _, ok := userSortCols[col]; return ok }

// ListUsers returns one page of the users matching f and the total count.
func (q *Q) ListUsers(ctx context.Context, f UserFilter) ([]*clinic.User, int, error) {
	w, args := f.cond()
	count, cargs := f.count()
	if count == "" {
		count, cargs = "SELECT COUNT(*) FROM users u WHERE "+w, args
	}
	var total int
	if err := q.queryRow(ctx, count, cargs, &total); err != nil {
		return nil, 0, err
	}
	query, args, err := q.userPage(ctx, f, w, args)
	if err != nil {
		return nil, 0, err
	}
	list, err := q.users(ctx, query, args...)
	return list, total, err
}

// count is the statement of f's total from the clinic's user counts
// (migration 00025), "" when f filters on more than types and statuses.
func (f UserFilter) count() (string, []any) {
	// Every field but these must be empty (a slice may be empty but not
	// nil, as the API builds them): a filter field added later counts the
	// users it matches until the counts can answer it.
	v := reflect.ValueOf(f)
	for i := range v.NumField() {
		switch fv := v.Field(i); v.Type().Field(i).Name {
		case "AccountID", "Types", "Statuses", "SortCol", "Desc", "Start", "After", "Limit":
		default:
			if !fv.IsZero() && (fv.Kind() != reflect.Slice || fv.Len() > 0) {
				return "", nil
			}
		}
	}
	query, args := "SELECT COALESCE(SUM(n), 0) FROM user_counts WHERE account_id = ?", []any{f.AccountID}
	if len(f.Types) > 0 {
		query += " AND type IN (" + placeholders(len(f.Types)) + ")"
		args = append(args, anys(f.Types)...)
	}
	if len(f.Statuses) > 0 {
		query += " AND status IN (" + placeholders(len(f.Statuses)) + ")"
		args = append(args, anys(f.Statuses)...)
	}
	return query, args
}

// cond is f's WHERE over users u, and its arguments.
func (f UserFilter) cond() (string, []any) {
	where := []string{"u.account_id = ?"}
	args := []any{f.AccountID}
	add := func(cond string, a ...any) { where = append(where, cond); args = append(args, a...) }
	if len(f.IDs) > 0 {
		add("u.id IN ("+placeholders(len(f.IDs))+")", anys(f.IDs)...)
	}
	if f.FullName != "" {
		add(`lower(trim(u.first_name || ' ' || u.last_name)) LIKE ? ESCAPE '\'`, likeArg(f.FullName))
	}
	if f.Email != "" {
		add(`lower(u.email) LIKE ? ESCAPE '\'`, likeArg(f.Email))
	}
	if f.Q != "" {
		add(`(lower(trim(u.first_name || ' ' || u.last_name)) LIKE ? ESCAPE '\' OR lower(u.email) LIKE ? ESCAPE '\')`, likeArg(f.Q), likeArg(f.Q))
	}
	if len(f.Types) > 0 {
		add("u.type IN ("+placeholders(len(f.Types))+")", anys(f.Types)...)
	}
	if len(f.Statuses) > 0 {
		add("u.status IN ("+placeholders(len(f.Statuses))+")", anys(f.Statuses)...)
	}
	if len(f.Subtypes) > 0 {
		add("u.subtype IN ("+placeholders(len(f.Subtypes))+")", anys(f.Subtypes)...)
	}
	if len(f.Roles) > 0 {
		var ors []string
		for _, r := range f.Roles {
			ors = append(ors, `(',' || u.roles || ',') LIKE ? ESCAPE '\'`)
			args = append(args, "%,"+escapeLike(r)+",%")
		}
		where = append(where, "("+strings.Join(ors, " OR ")+")")
	}
	if f.IsHidden != nil {
		add("u.is_hidden = ?", b2i(*f.IsHidden))
	}
	if f.IsAdmin != nil {
		add("u.is_admin = ?", b2i(*f.IsAdmin))
	}
	if f.Group != "" {
		add("u.user_group = ?", f.Group)
	}
	if f.RoomCode != "" {
		add("EXISTS (SELECT 1 FROM user_rooms ur JOIN rooms r ON r.id = ur.room_id WHERE ur.user_id = u.id AND r.account_id = ? AND r.code = ?)", f.AccountID, f.RoomCode)
	}
	if f.InAnyRoom {
		add("EXISTS (SELECT 1 FROM user_rooms ur WHERE ur.user_id = u.id AND ur.account_id = ?)", f.AccountID)
	}
	if f.PatientOf != 0 {
		add("EXISTS (SELECT 1 FROM visits v WHERE v.account_id = ? AND v.member_id = u.id AND v.provider_id = ?)", f.AccountID, f.PatientOf)
	}
	return strings.Join(where, " AND "), args
}

// userPage is the statement of f's page over the users matching where. The
// order is the sort column, then the id in the same direction, so the
// place after a user is one row comparison and the indexes of migration
// 00023 (by id, by full name, by created) serve it without a sort.
func (q *Q) userPage(ctx context.Context, f UserFilter, where string, args []any) (string, []any, error) {
	key := "u.id"
	if c, ok := userSortCols[f.SortCol]; ok {
		key = c
	}
	dir, op := "", ">"
	if f.Desc {
		dir, op = " DESC", "<"
	}
	if f.After != 0 {
		var at any
		if err := q.queryRow(ctx, "SELECT "+key+" FROM users u WHERE u.account_id = ? AND u.id = ?", []any{f.AccountID, f.After}, &at); err != nil {
			return "", nil, err
		}
		if key == "u.id" {
			where += " AND u.id " + op + " ?"
			args = append(args, f.After)
		} else {
			// A row value, which both engines read as one index range (an
			// OR of the two cases made SQLite sort).
			where += " AND (" + key + ", u.id) " + op + " (?, ?)"
			args = append(args, at, f.After)
		}
	}
	order := key + dir
	if key != "u.id" {
		order += ", u.id" + dir
	}
	return "SELECT " + userCols + " FROM users u WHERE " + where + " ORDER BY " + order + " LIMIT ? OFFSET ?",
		append(args, f.Limit, f.Start), nil
}

// HasVisitWith reports whether provider and member share a visit in the clinic.
func (q *Q) HasVisitWith(ctx context.Context, accountID, providerID, memberID int64) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM visits WHERE account_id = ? AND provider_id = ? AND member_id = ?",
		[]any{accountID, providerID, memberID}, &n)
	return n > 0, err
}

// ServesPatient reports whether a provider is one of a patient's own: the
// provider of one of their visits, or linked to a room where the patient
// filed an intake or to which the patient is linked too.
func (q *Q) ServesPatient(ctx context.Context, accountID, providerID, memberID int64) (bool, error) {
	var n int
	err := q.queryRow(ctx, `SELECT CASE WHEN
		EXISTS (SELECT 1 FROM visits WHERE account_id = ? AND provider_id = ? AND member_id = ?)
		OR EXISTS (SELECT 1 FROM user_rooms pr JOIN intakes i ON i.account_id = pr.account_id AND i.room_id = pr.room_id
			WHERE pr.account_id = ? AND pr.user_id = ? AND i.member_id = ?)
		OR EXISTS (SELECT 1 FROM user_rooms pr JOIN user_rooms mr ON mr.account_id = pr.account_id AND mr.room_id = pr.room_id
			WHERE pr.account_id = ? AND pr.user_id = ? AND mr.user_id = ?)
		THEN 1 ELSE 0 END`,
		[]any{accountID, providerID, memberID, accountID, providerID, memberID, accountID, providerID, memberID}, &n)
	return n > 0, err
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func likeArg(s string) string { return "%" + strings.ToLower(escapeLike(s)) + "%" }

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// UsernameTaken reports whether a user of the clinic has this username.
func (q *Q) UsernameTaken(ctx context.Context, accountID int64, username string) (bool, error) {
	var n int
	err := q.queryRow(ctx, "SELECT COUNT(*) FROM users WHERE account_id = ? AND username = ?", []any{accountID, username}, &n)
	return n > 0, err
}

// SetUserStatus sets a user's status and whether they are active; their
// credentials' checks see it at once (credentialsEnded).
func (q *Q) SetUserStatus(ctx context.Context, accountID, userID int64, status int, active bool, now int64) error {
	if err := q.mustAffect(ctx, `UPDATE users SET status = ?, active = ?, modified = ? WHERE account_id = ? AND id = ?`,
		status, b2i(active), now, accountID, userID); err != nil {
		return err
	}
	return q.credentialsEnded(ctx)
}

// UpdateProfile writes the fields a user may change about themself. Type,
// status, account, code and email verification are deliberately absent.
func (q *Q) UpdateProfile(ctx context.Context, u *clinic.User) error {
	ok, err := q.updateProfile(ctx, u, -1)
	if err == nil && !ok {
		err = ErrNotFound
	}
	return err
}

// UpdateProfileAt writes u's profile as UpdateProfile does, only while the
// row is still at version: false when another write came first.
func (q *Q) UpdateProfileAt(ctx context.Context, u *clinic.User, version int64) (bool, error) {
	return q.updateProfile(ctx, u, version)
}

// updateProfile is UpdateProfile, at version when it is not negative.
func (q *Q) updateProfile(ctx context.Context, u *clinic.User, version int64) (bool, error) {
	defer q.changed(q.c.names) // the names threads show
	extra, _ := json.Marshal(u.Extra)
	where, args := "account_id = ? AND id = ?", []any{u.AccountID, u.ID}
	if version >= 0 {
		where, args = where+" AND version = ?", append(args, version)
	}
	n, err := q.affected(ctx, `UPDATE users SET first_name = ?, last_name = ?, email = ?, password_hash = ?, dob = ?, gender = ?,
		tos = ?, timezone = ?, nationality = ?, phone = ?, street_addr = ?, city = ?, state = ?, zip = ?, pcp_name = ?,
		pcp_phone = ?, photo_file_id = ?, extra = ?, disable_emails = ?, modified = ?
		WHERE `+where,
		append([]any{u.FirstName, u.LastName, u.Email, u.PasswordHash, u.DOB, u.Gender,
			b2i(u.TOS), u.Timezone, u.Nationality, u.Phone, u.StreetAddr, u.City, u.State, u.Zip, u.PCPName,
			u.PCPPhone, nullID(u.PhotoFileID), string(extra), b2i(u.DisableEmails), u.Modified}, args...)...)
	return n == 1, err
}
