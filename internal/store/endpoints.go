package store

import (
	"context"
	"strings"
)

// WebhookEndpoint is one of a clinic's webhook endpoints: where its
// subscribed events go, signed with its secret (sealed).
type WebhookEndpoint struct {
	ID, AccountID     int64
	URL, SealedSecret string
	Events            []string
	Created, Modified int64
}

const hookCols = "id, account_id, url, secret, events, created, modified"

// CreateWebhookEndpoint stores e.
func (q *Q) CreateWebhookEndpoint(ctx context.Context, e *WebhookEndpoint) error {
	id, err := q.insert(ctx, "INSERT INTO webhook_endpoints (account_id, url, secret, events, created, modified) VALUES (?, ?, ?, ?, ?, ?)",
		e.AccountID, e.URL, e.SealedSecret, strings.Join(e.Events, ","), e.Created, e.Modified)
	e.ID = id
	return err
}

// WebhookEndpoints are a clinic's endpoints, oldest first.
func (q *Q) WebhookEndpoints(ctx context.Context, accountID int64) ([]*WebhookEndpoint, error) {
	return q.hookEndpoints(ctx, "SELECT "+hookCols+" FROM webhook_endpoints WHERE account_id = ? ORDER BY id", accountID)
}

// WebhookEndpointByID is one of a clinic's endpoints.
func (q *Q) WebhookEndpointByID(ctx context.Context, accountID, id int64) (*WebhookEndpoint, error) {
	es, err := q.hookEndpoints(ctx, "SELECT "+hookCols+" FROM webhook_endpoints WHERE account_id = ? AND id = ?", accountID, id)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, ErrNotFound
	}
	return es[0], nil
}

// DeleteWebhookEndpoint removes one of a clinic's endpoints; its pending
// deliveries are finished undelivered. False when there was none.
func (q *Q) DeleteWebhookEndpoint(ctx context.Context, accountID, id, now int64) (bool, error) {
	n, err := q.affected(ctx, "DELETE FROM webhook_endpoints WHERE account_id = ? AND id = ?", accountID, id)
	if err != nil || n == 0 {
		return false, err
	}
	_, err = q.exec(ctx, "UPDATE outbox SET done = ?, last_error = 'the endpoint was removed' WHERE account_id = ? AND endpoint_id = ? AND done IS NULL", now, accountID, id)
	return true, err
}

func (q *Q) hookEndpoints(ctx context.Context, query string, args ...any) ([]*WebhookEndpoint, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*WebhookEndpoint
	for rows.Next() {
		var e WebhookEndpoint
		var events string
		if err := rows.Scan(&e.ID, &e.AccountID, &e.URL, &e.SealedSecret, &events, &e.Created, &e.Modified); err != nil {
			return nil, q.d.translate(err)
		}
		e.Events = strings.Split(events, ",")
		out = append(out, &e)
	}
	return out, q.d.translate(rows.Err())
}
