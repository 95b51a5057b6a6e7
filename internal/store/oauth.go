package store

import (
	"context"
	"errors"
	"strings"

	"teleclinic/internal/clinic"
)

// The SMART authorization server's rows: clients, authorize requests,
// tokens and the signing key. Clients and tokens are found by their
// global identifiers (a client id, a token id, a hash), as user tokens
// are by their hash: finding them is how the clinic is learnt.

const oauthClientCols = "id, account_id, client_id, name, kind, secret_hash, redirect_uris, jwks, scopes, revoked, created"

// CreateOAuthClient stores c.
func (q *Q) CreateOAuthClient(ctx context.Context, c *clinic.OAuthClient) error {
	id, err := q.insert(ctx, "INSERT INTO oauth_clients (account_id, client_id, name, kind, secret_hash, redirect_uris, jwks, scopes, revoked, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
		c.AccountID, c.ClientID, c.Name, c.Kind, c.SecretHash, strings.Join(c.RedirectURIs, "\n"), c.JWKS, strings.Join(c.Scopes, " "), c.Created)
	c.ID = id
	return err
}

// OAuthClients are a clinic's clients, oldest first.
func (q *Q) OAuthClients(ctx context.Context, accountID int64) ([]*clinic.OAuthClient, error) {
	return q.oauthClients(ctx, "SELECT "+oauthClientCols+" FROM oauth_clients WHERE account_id = ? ORDER BY id", accountID)
}

// OAuthClientByClientID is the client of a client id, in whichever clinic.
func (q *Q) OAuthClientByClientID(ctx context.Context, clientID string) (*clinic.OAuthClient, error) {
	cs, err := q.oauthClients(ctx, "SELECT "+oauthClientCols+" FROM oauth_clients WHERE client_id = ?", clientID)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, ErrNotFound
	}
	return cs[0], nil
}

// RevokeOAuthClient marks one of a clinic's clients revoked and revokes
// every token it holds. False when the clinic has no such client.
func (q *Q) RevokeOAuthClient(ctx context.Context, accountID, id, now int64) (bool, error) {
	var clientID string
	err := q.queryRow(ctx, "SELECT client_id FROM oauth_clients WHERE account_id = ? AND id = ?", []any{accountID, id}, &clientID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := q.exec(ctx, "UPDATE oauth_clients SET revoked = ? WHERE account_id = ? AND id = ? AND revoked = 0", now, accountID, id); err != nil {
		return false, err
	}
	_, err = q.exec(ctx, "UPDATE oauth_tokens SET revoked = ? WHERE account_id = ? AND client_id = ? AND revoked = 0", now, accountID, clientID)
	return true, err
}

func (q *Q) oauthClients(ctx context.Context, query string, args ...any) ([]*clinic.OAuthClient, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*clinic.OAuthClient
	for rows.Next() {
		var c clinic.OAuthClient
		var uris, scopes string
		if err := rows.Scan(&c.ID, &c.AccountID, &c.ClientID, &c.Name, &c.Kind, &c.SecretHash, &uris, &c.JWKS, &scopes, &c.Revoked, &c.Created); err != nil {
			return nil, err
		}
		c.RedirectURIs, c.Scopes = fields(uris, "\n"), strings.Fields(scopes)
		out = append(out, &c)
	}
	return out, rows.Err()
}

// fields splits s at sep, leaving out empty parts.
func fields(s, sep string) []string {
	out := []string{}
	for _, f := range strings.Split(s, sep) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

const oauthRequestCols = "id, account_id, client_id, params, user_id, patient_id, scopes, auth_time, expires"

// CreateOAuthRequest stores r.
func (q *Q) CreateOAuthRequest(ctx context.Context, r *clinic.OAuthRequest) error {
	_, err := q.exec(ctx, "INSERT INTO oauth_requests (id, account_id, client_id, params, user_id, patient_id, scopes, auth_time, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.ID, r.AccountID, r.ClientID, string(r.Params), r.UserID, r.PatientID, strings.Join(r.Scopes, " "), r.AuthTime, r.Expires)
	return err
}

// OAuthRequestByID is an authorize request not yet expired at now.
func (q *Q) OAuthRequestByID(ctx context.Context, id string, now int64) (*clinic.OAuthRequest, error) {
	return q.oauthRequest(ctx, "SELECT "+oauthRequestCols+" FROM oauth_requests WHERE id = ? AND expires > ?", id, now)
}

// OAuthRequestByCode is the approved request a code was issued for, not
// yet expired at now.
func (q *Q) OAuthRequestByCode(ctx context.Context, codeHash string, now int64) (*clinic.OAuthRequest, error) {
	return q.oauthRequest(ctx, "SELECT "+oauthRequestCols+" FROM oauth_requests WHERE code_hash = ? AND auth_time > 0 AND expires > ?", codeHash, now)
}

// ApproveOAuthRequest records the person's approval of a request of their
// clinic: who, the patient in context and the scopes granted. False when
// the request is gone or was already decided.
func (q *Q) ApproveOAuthRequest(ctx context.Context, r *clinic.OAuthRequest) (bool, error) {
	n, err := q.affected(ctx, "UPDATE oauth_requests SET user_id = ?, patient_id = ?, scopes = ?, auth_time = ? WHERE id = ? AND account_id = ? AND auth_time = 0",
		r.UserID, r.PatientID, strings.Join(r.Scopes, " "), r.AuthTime, r.ID, r.AccountID)
	return n == 1, err
}

// SaveOAuthCode ties the code issued for an approved request to it, once.
func (q *Q) SaveOAuthCode(ctx context.Context, id, codeHash string) (bool, error) {
	n, err := q.affected(ctx, "UPDATE oauth_requests SET code_hash = ? WHERE id = ? AND auth_time > 0 AND code_hash IS NULL", codeHash, id)
	return n == 1, err
}

// ConsumeOAuthRequest removes an approved request whose code is being
// exchanged, once: false when it is gone (its code used already).
func (q *Q) ConsumeOAuthRequest(ctx context.Context, id string) (bool, error) {
	n, err := q.affected(ctx, "DELETE FROM oauth_requests WHERE id = ? AND auth_time > 0 AND code_hash IS NOT NULL", id)
	return n == 1, err
}

// DeleteOAuthRequest removes a request (its code used, or refused), and
// those expired at now.
func (q *Q) DeleteOAuthRequest(ctx context.Context, id string, now int64) error {
	_, err := q.exec(ctx, "DELETE FROM oauth_requests WHERE id = ? OR expires <= ?", id, now)
	return err
}

func (q *Q) oauthRequest(ctx context.Context, query string, args ...any) (*clinic.OAuthRequest, error) {
	var r clinic.OAuthRequest
	var params, scopes string
	err := q.queryRow(ctx, query, args, &r.ID, &r.AccountID, &r.ClientID, &params, &r.UserID, &r.PatientID, &scopes, &r.AuthTime, &r.Expires)
	if err != nil {
		return nil, err
	}
	r.Params, r.Scopes = []byte(params), strings.Fields(scopes)
	return &r, nil
}

const oauthTokenCols = "id, account_id, client_id, user_id, patient_id, scopes, auth_time, expires, COALESCE(refresh_hash, ''), refresh_expires, revoked, created"

// CreateOAuthToken stores t.
func (q *Q) CreateOAuthToken(ctx context.Context, t *clinic.OAuthToken) error {
	var refresh any
	if t.RefreshHash != "" {
		refresh = t.RefreshHash
	}
	_, err := q.exec(ctx, "INSERT INTO oauth_tokens (id, account_id, client_id, user_id, patient_id, scopes, auth_time, expires, refresh_hash, refresh_expires, revoked, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
		t.ID, t.AccountID, t.ClientID, t.UserID, t.PatientID, strings.Join(t.Scopes, " "), t.AuthTime, t.Expires, refresh, t.RefreshExpires, t.Created)
	return err
}

// OAuthTokenByID is an access token by its id, revoked or not.
func (q *Q) OAuthTokenByID(ctx context.Context, id string) (*clinic.OAuthToken, error) {
	return q.oauthToken(ctx, "SELECT "+oauthTokenCols+" FROM oauth_tokens WHERE id = ?", id)
}

// OAuthTokenByRefresh is the token a refresh token renews, revoked or not.
func (q *Q) OAuthTokenByRefresh(ctx context.Context, refreshHash string) (*clinic.OAuthToken, error) {
	return q.oauthToken(ctx, "SELECT "+oauthTokenCols+" FROM oauth_tokens WHERE refresh_hash = ?", refreshHash)
}

// RevokeOAuthToken revokes a token row, once: false when it already was
// (a refresh token used twice).
func (q *Q) RevokeOAuthToken(ctx context.Context, id string, now int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE oauth_tokens SET revoked = ? WHERE id = ? AND revoked = 0", now, id)
	return n == 1, err
}

func (q *Q) oauthToken(ctx context.Context, query string, args ...any) (*clinic.OAuthToken, error) {
	var t clinic.OAuthToken
	var scopes string
	err := q.queryRow(ctx, query, args, &t.ID, &t.AccountID, &t.ClientID, &t.UserID, &t.PatientID, &scopes, &t.AuthTime, &t.Expires, &t.RefreshHash, &t.RefreshExpires, &t.Revoked, &t.Created)
	if err != nil {
		return nil, err
	}
	t.Scopes = strings.Fields(scopes)
	return &t, nil
}

// OAuthKey is the token signing key, sealed; ErrNotFound before the first.
func (q *Q) OAuthKey(ctx context.Context) (id, sealed string, err error) {
	err = q.queryRow(ctx, "SELECT id, sealed FROM oauth_keys ORDER BY created, id LIMIT 1", nil, &id, &sealed)
	return id, sealed, err
}

// AddOAuthKey stores a signing key. Two processes that make the first key
// at once both store theirs, and both then use the one OAuthKey reads
// first (the oldest).
func (q *Q) AddOAuthKey(ctx context.Context, id, sealed string, now int64) error {
	_, err := q.exec(ctx, "INSERT INTO oauth_keys (id, sealed, created) VALUES (?, ?, ?)", id, sealed, now)
	return err
}

// UseOAuthAssertion records a backend service's assertion id until it
// expires, once: a second use is ErrConflict (the primary key decides,
// across processes). Those expired at now are forgotten.
func (q *Q) UseOAuthAssertion(ctx context.Context, id string, expires, now int64) error {
	if _, err := q.exec(ctx, "DELETE FROM oauth_assertions WHERE expires <= ?", now); err != nil {
		return err
	}
	_, err := q.exec(ctx, "INSERT INTO oauth_assertions (id, expires) VALUES (?, ?)", id, expires)
	return err
}

// OAuthGrantsOf are the apps a person holds live tokens of (any token not
// revoked whose access or refresh time is still running at now), with
// when each was last granted.
func (q *Q) OAuthGrantsOf(ctx context.Context, accountID, userID, now int64) ([]*clinic.OAuthClient, []int64, error) {
	rows, err := q.query(ctx, `SELECT c.client_id, c.name, MAX(t.auth_time) FROM oauth_tokens t JOIN oauth_clients c ON c.client_id = t.client_id
		WHERE t.account_id = ? AND t.user_id = ? AND t.revoked = 0 AND (t.expires > ? OR t.refresh_expires > ?)
		GROUP BY c.client_id, c.name ORDER BY c.name`, accountID, userID, now, now)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var cs []*clinic.OAuthClient
	var when []int64
	for rows.Next() {
		var c clinic.OAuthClient
		var at int64
		if err := rows.Scan(&c.ClientID, &c.Name, &at); err != nil {
			return nil, nil, err
		}
		cs, when = append(cs, &c), append(when, at)
	}
	return cs, when, rows.Err()
}

// RevokeOAuthGrant revokes every token a person holds of an app: how many.
func (q *Q) RevokeOAuthGrant(ctx context.Context, accountID, userID int64, clientID string, now int64) (int64, error) {
	return q.affected(ctx, "UPDATE oauth_tokens SET revoked = ? WHERE account_id = ? AND user_id = ? AND client_id = ? AND revoked = 0",
		now, accountID, userID, clientID)
}
