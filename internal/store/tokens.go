package store

import "context"

// Token kinds.
const (
	TokenAccess  = "access"
	TokenRefresh = "refresh"
	// TokenLink is the sign-in link GET /api_v3/auth puts in the portal
	// address: good once, for minutes, and never as an API credential.
	TokenLink = "link"
	// TokenVisitLink is the link an email about a visit carries: good
	// once, until a day after the visit, for that visit alone (VisitID).
	TokenVisitLink = "visitlink"
)

// Token is a stored access or refresh token. The token value itself is never
// stored, only its SHA-256 hash.
type Token struct {
	ID        int64
	AccountID int64
	UserID    int64
	Kind      string
	Hash      string
	Family    string
	Created   int64
	LastUsed  int64
	Expires   int64
	Used      int64 // refresh: when it was rotated; 0 while unused
	Revoked   int64 // 0 while valid
	// VisitID is the one visit a visit link, or the session it started,
	// opens; 0 for every other token.
	VisitID int64
}

const tokenCols = "t.id, t.account_id, t.user_id, t.kind, t.hash, t.family, t.created, t.last_used, t.expires, COALESCE(t.used, 0), COALESCE(t.revoked, 0), COALESCE(t.visit_id, 0)"

func scanToken(sc interface{ Scan(...any) error }, t *Token) error {
	return sc.Scan(&t.ID, &t.AccountID, &t.UserID, &t.Kind, &t.Hash, &t.Family, &t.Created, &t.LastUsed, &t.Expires, &t.Used, &t.Revoked, &t.VisitID)
}

// CreateToken stores a token row.
func (q *Q) CreateToken(ctx context.Context, t *Token) error {
	id, err := q.insert(ctx, `INSERT INTO tokens (account_id, user_id, kind, hash, family, created, last_used, expires, visit_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.AccountID, t.UserID, t.Kind, t.Hash, t.Family, t.Created, t.LastUsed, t.Expires, nullZero(t.VisitID))
	t.ID = id
	return err
}

// TokenByHash finds a token by the hash of its value.
func (q *Q) TokenByHash(ctx context.Context, hash string) (*Token, error) {
	var t Token
	rows, err := q.query(ctx, "SELECT "+tokenCols+" FROM tokens t WHERE t.hash = ?", hash)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, firstErr(q.d.translate(rows.Err()), ErrNotFound)
	}
	return &t, scanToken(rows, &t)
}

// TokenAuth is what authenticating a request needs of an access token, and
// the version of its user's row.
type TokenAuth struct {
	ID          int64
	AccountID   int64
	UserID      int64
	Kind        string
	Family      string
	LastUsed    int64
	Expires     int64
	Revoked     int64 // 0 while valid
	UserVersion int64
	VisitID     int64 // the one visit the token opens; 0: not so bounded
}

// TokenForAuth finds a token by hash with its user's version: the lookup made
// for every request that carries a user token. It reads nine columns, not
// the user's forty: the caller reuses the user it read at that version
// (app/auth.go) rather than scan and decode the row on every request. It
// is a read by key (byKey).
func (q *Q) TokenForAuth(ctx context.Context, hash string) (*TokenAuth, error) {
	var t TokenAuth
	err := q.queryRow(q.byKey(ctx), `SELECT t.id, t.account_id, t.user_id, t.kind, t.family, t.last_used, t.expires, COALESCE(t.revoked, 0), u.version,
		COALESCE(t.visit_id, 0)
		FROM tokens t JOIN users u ON u.id = t.user_id AND u.account_id = t.account_id WHERE t.hash = ?`, []any{hash},
		&t.ID, &t.AccountID, &t.UserID, &t.Kind, &t.Family, &t.LastUsed, &t.Expires, &t.Revoked, &t.UserVersion, &t.VisitID)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// TouchToken moves an access token's idle clock forward. The condition keeps
// it to one write per interval however many requests arrive.
func (q *Q) TouchToken(ctx context.Context, id, now, notAfter int64) error {
	_, err := q.exec(ctx, "UPDATE tokens SET last_used = ? WHERE id = ? AND last_used < ?", now, id, notAfter)
	return err
}

// UseToken marks a token used if nobody has: exactly one caller gets true,
// however many race, in one process or several.
func (q *Q) UseToken(ctx context.Context, id, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE tokens SET used = ? WHERE id = ? AND used IS NULL AND revoked IS NULL", now, id)
	return n == 1, err
}

// RevokeToken revokes one valid token; true if this call revoked it.
func (q *Q) RevokeToken(ctx context.Context, accountID, id, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE tokens SET revoked = ? WHERE account_id = ? AND id = ? AND revoked IS NULL", now, accountID, id)
	if err == nil && n == 1 {
		err = q.credentialsEnded(ctx)
	}
	return n == 1, err
}

// RevokeUserTokenByHash revokes a token of this user given its hash; tokens of
// other users are left alone.
func (q *Q) RevokeUserTokenByHash(ctx context.Context, accountID, userID int64, hash string, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE tokens SET revoked = ? WHERE account_id = ? AND user_id = ? AND hash = ? AND revoked IS NULL", now, accountID, userID, hash)
	if err == nil && n == 1 {
		err = q.credentialsEnded(ctx)
	}
	return n == 1, err
}

// RevokeFamily revokes every token of a login, the newest included.
func (q *Q) RevokeFamily(ctx context.Context, accountID int64, family string, now int64) error {
	_, err := q.exec(ctx, "UPDATE tokens SET revoked = ? WHERE account_id = ? AND family = ? AND revoked IS NULL", now, accountID, family)
	if err != nil {
		return err
	}
	return q.credentialsEnded(ctx)
}

// RevokeUserTokens revokes all of a user's tokens (password change or reset).
func (q *Q) RevokeUserTokens(ctx context.Context, accountID, userID, now int64) error {
	_, err := q.exec(ctx, "UPDATE tokens SET revoked = ? WHERE account_id = ? AND user_id = ? AND revoked IS NULL", now, accountID, userID)
	if err != nil {
		return err
	}
	return q.credentialsEnded(ctx)
}

// UserSecret is a single-use secret mailed to a user.
type UserSecret struct {
	ID        int64
	AccountID int64
	UserID    int64
	Purpose   string
	Hash      string
	Created   int64
	Expires   int64
}

// CreateUserSecret stores a single-use secret.
func (q *Q) CreateUserSecret(ctx context.Context, s *UserSecret) error {
	id, err := q.insert(ctx, "INSERT INTO user_secrets (account_id, user_id, purpose, hash, created, expires) VALUES (?, ?, ?, ?, ?, ?)",
		s.AccountID, s.UserID, s.Purpose, s.Hash, s.Created, s.Expires)
	s.ID = id
	return err
}

// ConsumeUserSecret marks the unexpired, unused secret with this hash used and
// returns it; ErrNotFound when there is none or another caller took it first.
func (q *Q) ConsumeUserSecret(ctx context.Context, accountID int64, purpose, hash string, now int64) (*UserSecret, error) {
	var s UserSecret
	err := q.queryRow(ctx, "SELECT id, account_id, user_id, purpose, hash, created, expires FROM user_secrets WHERE account_id = ? AND purpose = ? AND hash = ? AND used IS NULL AND expires > ?",
		[]any{accountID, purpose, hash, now}, &s.ID, &s.AccountID, &s.UserID, &s.Purpose, &s.Hash, &s.Created, &s.Expires)
	if err != nil {
		return nil, err
	}
	n, err := q.affected(ctx, "UPDATE user_secrets SET used = ? WHERE id = ? AND used IS NULL", now, s.ID)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	return &s, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// TokenFamily returns the login a token belongs to.
func (q *Q) TokenFamily(ctx context.Context, accountID, id int64) (string, error) {
	var fam string
	err := q.queryRow(ctx, "SELECT family FROM tokens WHERE account_id = ? AND id = ?", []any{accountID, id}, &fam)
	return fam, err
}

// RevokeUserTokensExcept revokes a user's tokens outside one login: a
// password change keeps the session that made it and ends the others.
func (q *Q) RevokeUserTokensExcept(ctx context.Context, accountID, userID int64, keepFamily string, now int64) error {
	_, err := q.exec(ctx, "UPDATE tokens SET revoked = ? WHERE account_id = ? AND user_id = ? AND family <> ? AND revoked IS NULL", now, accountID, userID, keepFamily)
	if err != nil {
		return err
	}
	return q.credentialsEnded(ctx)
}

// RevokeVisitTokens revokes every valid token that opens visit id alone:
// the links mailed about it and the sessions they started.
func (q *Q) RevokeVisitTokens(ctx context.Context, accountID, visitID, now int64) (int, error) {
	n, err := q.affected(ctx, "UPDATE tokens SET revoked = ? WHERE account_id = ? AND visit_id = ? AND revoked IS NULL", now, accountID, visitID)
	if err == nil && n > 0 {
		err = q.credentialsEnded(ctx)
	}
	return int(n), err
}
