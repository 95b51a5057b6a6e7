package store

import (
	"context"
	"encoding/json"

	"teleclinic/internal/clinic"
)

// AccountSecrets are the SHA-256 hashes of a clinic's three credentials.
type AccountSecrets struct {
	AdminTokenHash string
	APIKeyHash     string
	APISecretHash  string
}

const accountCols = "id, code, name, domain, sso_enabled, features, created, modified"

func scanAccount(sc interface{ Scan(...any) error }) (*clinic.Account, error) {
	var a clinic.Account
	var sso int
	var features string
	if err := sc.Scan(&a.ID, &a.Code, &a.Name, &a.Domain, &sso, &features, &a.Created, &a.Modified); err != nil {
		return nil, err
	}
	a.SSOEnabled = sso == 1
	_ = json.Unmarshal([]byte(features), &a.Features)
	return &a, nil
}

func (q *Q) accountWhere(ctx context.Context, where string, arg any) (*clinic.Account, error) {
	rows, err := q.query(ctx, "SELECT "+accountCols+" FROM accounts WHERE "+where, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, q.d.translate(err)
		}
		return nil, ErrNotFound
	}
	return scanAccount(rows)
}

// AccountByCode finds a clinic by its account code.
func (q *Q) AccountByCode(ctx context.Context, code string) (*clinic.Account, error) {
	return q.accountWhere(ctx, "code = ?", code)
}

// AccountByID finds a clinic by id.
func (q *Q) AccountByID(ctx context.Context, id int64) (*clinic.Account, error) {
	return q.accountWhere(ctx, "id = ?", id)
}

// AccountByAdminTokenHash finds the clinic whose admin token hashes to h.
func (q *Q) AccountByAdminTokenHash(ctx context.Context, h string) (*clinic.Account, error) {
	return q.accountWhere(ctx, "admin_token_hash = ?", h)
}

// AccountAPISecretHash returns the stored API secret hash of the clinic with
// this code and API key hash.
func (q *Q) AccountAPISecretHash(ctx context.Context, code, apiKeyHash string) (int64, string, error) {
	var id int64
	var h string
	err := q.queryRow(ctx, "SELECT id, api_secret_hash FROM accounts WHERE code = ? AND api_key_hash = ?",
		[]any{code, apiKeyHash}, &id, &h)
	return id, h, err
}

// ListAccounts lists every clinic, ordered by code.
func (q *Q) ListAccounts(ctx context.Context) ([]*clinic.Account, error) {
	rows, err := q.query(ctx, "SELECT "+accountCols+" FROM accounts ORDER BY code")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*clinic.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, q.d.translate(rows.Err())
}

// CreateAccount inserts a clinic; a duplicate code is ErrConflict.
func (q *Q) CreateAccount(ctx context.Context, a *clinic.Account, s AccountSecrets) error {
	features, _ := json.Marshal(nonNil(a.Features))
	id, err := q.insert(ctx, `INSERT INTO accounts (code, name, domain, sso_enabled, admin_token_hash, api_key_hash, api_secret_hash, features, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.Code, a.Name, a.Domain, b2i(a.SSOEnabled), s.AdminTokenHash, s.APIKeyHash, s.APISecretHash, string(features), a.Created, a.Modified)
	a.ID = id
	return err
}

// SetAccountSSO turns SSO on or off for a clinic.
func (q *Q) SetAccountSSO(ctx context.Context, id int64, on bool, now int64) error {
	defer q.changed(q.c.accounts)
	return q.mustAffect(ctx, "UPDATE accounts SET sso_enabled = ?, modified = ? WHERE id = ?", b2i(on), now, id)
}

// SetAccountAdminTokenHash replaces the admin token; the old one stops working with the commit.
func (q *Q) SetAccountAdminTokenHash(ctx context.Context, id int64, h string, now int64) error {
	defer q.changed(q.c.accounts)
	if err := q.mustAffect(ctx, "UPDATE accounts SET admin_token_hash = ?, modified = ? WHERE id = ?", h, now, id); err != nil {
		return err
	}
	return q.credentialsEnded(ctx)
}

// SetAccountAPISecretHash replaces the API secret.
func (q *Q) SetAccountAPISecretHash(ctx context.Context, id int64, h string, now int64) error {
	defer q.changed(q.c.accounts)
	return q.mustAffect(ctx, "UPDATE accounts SET api_secret_hash = ?, modified = ? WHERE id = ?", h, now, id)
}

// mustAffect runs an UPDATE or DELETE that must touch a row; none is ErrNotFound.
func (q *Q) mustAffect(ctx context.Context, query string, args ...any) error {
	n, err := q.affected(ctx, query, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// SetAccountAPIKeyHash replaces the API key.
func (q *Q) SetAccountAPIKeyHash(ctx context.Context, id int64, h string, now int64) error {
	defer q.changed(q.c.accounts)
	return q.mustAffect(ctx, "UPDATE accounts SET api_key_hash = ?, modified = ? WHERE id = ?", h, now, id)
}

// SetAccountFeatures replaces the list of switched-on features.
func (q *Q) SetAccountFeatures(ctx context.Context, id int64, features []string, now int64) error {
	defer q.changed(q.c.accounts)
	b, _ := json.Marshal(nonNil(features))
	return q.mustAffect(ctx, "UPDATE accounts SET features = ?, modified = ? WHERE id = ?", string(b), now, id)
}

// AccountWebhook is where a clinic's webhook goes.
type AccountWebhook struct {
	Code         string // the clinic's account code, which deliveries carry
	URL          string // "" when none is configured
	SealedSecret string // the signing secret sealed with the server key; "" when none
}

// AccountWebhookByID reads a clinic's webhook settings.
func (q *Q) AccountWebhookByID(ctx context.Context, id int64) (*AccountWebhook, error) {
	var w AccountWebhook
	err := q.queryRow(ctx, "SELECT code, webhook_url, webhook_secret FROM accounts WHERE id = ?", []any{id}, &w.Code, &w.URL, &w.SealedSecret)
	return &w, err
}

// SetAccountWebhook replaces a clinic's webhook URL and sealed secret.
func (q *Q) SetAccountWebhook(ctx context.Context, id int64, url, sealedSecret string, now int64) error {
	defer q.changed(q.c.accounts)
	return q.mustAffect(ctx, "UPDATE accounts SET webhook_url = ?, webhook_secret = ?, modified = ? WHERE id = ?", url, sealedSecret, now, id)
}
