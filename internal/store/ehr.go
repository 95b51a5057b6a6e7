package store

import (
	"context"

	"teleclinic/internal/clinic"
)

// The EHR launch's rows (SMART EHR launch, Teleclinic the app).

const ehrCols = "id, account_id, iss, client_id, secret, room_id, created"

// CreateEHRConnection stores c; ErrConflict when its iss is connected
// already (to this clinic or another).
func (q *Q) CreateEHRConnection(ctx context.Context, c *clinic.EHRConnection) error {
	id, err := q.insert(ctx, "INSERT INTO ehr_connections (account_id, iss, client_id, secret, room_id, created) VALUES (?, ?, ?, ?, ?, ?)",
		c.AccountID, c.ISS, c.ClientID, c.SealedSecret, c.RoomID, c.Created)
	c.ID = id
	return err
}

// EHRConnections are a clinic's connections, oldest first.
func (q *Q) EHRConnections(ctx context.Context, accountID int64) ([]*clinic.EHRConnection, error) {
	return q.ehrConnections(ctx, "SELECT "+ehrCols+" FROM ehr_connections WHERE account_id = ? ORDER BY id", accountID)
}

// EHRConnectionByISS is the connection of an EHR's FHIR base, in
// whichever clinic: a launch names it.
func (q *Q) EHRConnectionByISS(ctx context.Context, iss string) (*clinic.EHRConnection, error) {
	return q.ehrConnection(ctx, "SELECT "+ehrCols+" FROM ehr_connections WHERE iss = ?", iss)
}

// EHRConnectionByID is one of a clinic's connections.
func (q *Q) EHRConnectionByID(ctx context.Context, accountID, id int64) (*clinic.EHRConnection, error) {
	return q.ehrConnection(ctx, "SELECT "+ehrCols+" FROM ehr_connections WHERE account_id = ? AND id = ?", accountID, id)
}

// DeleteEHRConnection removes one of a clinic's connections with its
// links and launches (the visits stay). False when there was none.
func (q *Q) DeleteEHRConnection(ctx context.Context, accountID, id int64) (bool, error) {
	for _, t := range []string{"ehr_links", "ehr_launches", "ehr_visits"} {
		if _, err := q.exec(ctx, "DELETE FROM "+t+" WHERE account_id = ? AND connection_id = ?", accountID, id); err != nil {
			return false, err
		}
	}
	n, err := q.affected(ctx, "DELETE FROM ehr_connections WHERE account_id = ? AND id = ?", accountID, id)
	return n == 1, err
}

func (q *Q) ehrConnection(ctx context.Context, query string, args ...any) (*clinic.EHRConnection, error) {
	cs, err := q.ehrConnections(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, ErrNotFound
	}
	return cs[0], nil
}

func (q *Q) ehrConnections(ctx context.Context, query string, args ...any) ([]*clinic.EHRConnection, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*clinic.EHRConnection
	for rows.Next() {
		var c clinic.EHRConnection
		if err := rows.Scan(&c.ID, &c.AccountID, &c.ISS, &c.ClientID, &c.SealedSecret, &c.RoomID, &c.Created); err != nil {
			return nil, err
		}
		out = append(out, &c)
	}
	return out, rows.Err()
}

// LinkEHRUser ties an EHR user (their fhirUser) to a provider, replacing
// any link the user had.
func (q *Q) LinkEHRUser(ctx context.Context, accountID, connectionID int64, fhirUser string, userID, now int64) error {
	if _, err := q.exec(ctx, "DELETE FROM ehr_links WHERE account_id = ? AND connection_id = ? AND fhir_user = ?", accountID, connectionID, fhirUser); err != nil {
		return err
	}
	_, err := q.exec(ctx, "INSERT INTO ehr_links (connection_id, fhir_user, account_id, user_id, created) VALUES (?, ?, ?, ?, ?)",
		connectionID, fhirUser, accountID, userID, now)
	return err
}

// EHRUser is the provider an EHR user is linked to.
func (q *Q) EHRUser(ctx context.Context, accountID, connectionID int64, fhirUser string) (int64, error) {
	var id int64
	err := q.queryRow(ctx, "SELECT user_id FROM ehr_links WHERE account_id = ? AND connection_id = ? AND fhir_user = ?", []any{accountID, connectionID, fhirUser}, &id)
	return id, err
}

// CreateEHRLaunch stores a launch in flight.
func (q *Q) CreateEHRLaunch(ctx context.Context, l *clinic.EHRLaunch) error {
	_, err := q.exec(ctx, "INSERT INTO ehr_launches (state, account_id, connection_id, verifier, issuer, token_url, expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
		l.State, l.AccountID, l.ConnectionID, l.Verifier, l.Issuer, l.TokenURL, l.Expires)
	return err
}

// TakeEHRLaunch removes and answers the launch of a state, once: of two
// returns with one state, one gets it. Those expired at now go too.
func (q *Q) TakeEHRLaunch(ctx context.Context, state string, now int64) (*clinic.EHRLaunch, error) {
	var l clinic.EHRLaunch
	err := q.queryRow(ctx, "SELECT state, account_id, connection_id, verifier, issuer, token_url, expires FROM ehr_launches WHERE state = ?", []any{state},
		&l.State, &l.AccountID, &l.ConnectionID, &l.Verifier, &l.Issuer, &l.TokenURL, &l.Expires)
	if err != nil {
		return nil, err
	}
	n, err := q.affected(ctx, "DELETE FROM ehr_launches WHERE state = ?", state)
	if err != nil {
		return nil, err
	}
	if _, err := q.exec(ctx, "DELETE FROM ehr_launches WHERE expires <= ?", now); err != nil {
		return nil, err
	}
	if n != 1 || l.Expires <= now {
		return nil, ErrNotFound
	}
	return &l, nil
}

// EHRVisit is the visit an EHR's appointment (or encounter) became.
func (q *Q) EHRVisit(ctx context.Context, accountID, connectionID int64, ref string) (int64, error) {
	var id int64
	err := q.queryRow(ctx, "SELECT visit_id FROM ehr_visits WHERE account_id = ? AND connection_id = ? AND ehr_ref = ?", []any{accountID, connectionID, ref}, &id)
	return id, err
}

// AddEHRVisit records the visit an EHR reference became, once:
// ErrConflict when a concurrent launch recorded one first.
func (q *Q) AddEHRVisit(ctx context.Context, accountID, connectionID int64, ref string, visitID int64) error {
	_, err := q.exec(ctx, "INSERT INTO ehr_visits (connection_id, ehr_ref, account_id, visit_id) VALUES (?, ?, ?, ?)", connectionID, ref, accountID, visitID)
	return err
}
