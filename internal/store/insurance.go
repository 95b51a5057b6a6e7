package store

import (
	"context"
	"database/sql"
	"encoding/json"

	"teleclinic/internal/clinic"
)

// InsuranceCards lists a user's cards, primary first.
func (q *Q) InsuranceCards(ctx context.Context, accountID, userID int64) ([]*clinic.InsuranceCard, error) {
	return q.insuranceCards(ctx, "SELECT user_id, card_type, fields, modified, check_started FROM insurance_cards WHERE account_id = ? AND user_id = ? ORDER BY card_type", accountID, userID)
}

// InsuranceCardsOf reads the cards of the clinic's users of ids in one
// statement, by user (a list of visits reads its patients' cards once).
func (q *Q) InsuranceCardsOf(ctx context.Context, accountID int64, ids []int64) (map[int64][]*clinic.InsuranceCard, error) {
	out := map[int64][]*clinic.InsuranceCard{}
	if ids = distinct(ids); len(ids) == 0 {
		return out, nil
	}
	cards, err := q.insuranceCards(ctx, "SELECT user_id, card_type, fields, modified, check_started FROM insurance_cards WHERE account_id = ? AND "+inList("user_id", len(ids))+" ORDER BY user_id, card_type",
		append([]any{accountID}, anys(ids)...)...)
	for _, c := range cards {
		out[c.UserID] = append(out[c.UserID], c)
	}
	return out, err
}

func (q *Q) insuranceCards(ctx context.Context, query string, args ...any) ([]*clinic.InsuranceCard, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.InsuranceCard{}
	for rows.Next() {
		var c clinic.InsuranceCard
		var raw string
		if err := rows.Scan(&c.UserID, &c.CardType, &raw, &c.Modified, &c.CheckStarted); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(raw), &c.Fields); err != nil {
			return nil, err
		}
		out = append(out, &c)
	}
	return out, rows.Err()
}

// InsuranceCard finds one card.
func (q *Q) InsuranceCard(ctx context.Context, accountID, userID int64, cardType string) (*clinic.InsuranceCard, error) {
	cards, err := q.InsuranceCards(ctx, accountID, userID)
	if err != nil {
		return nil, err
	}
	for _, c := range cards {
		if c.CardType == cardType {
			return c, nil
		}
	}
	return nil, ErrNotFound
}

// PutInsuranceCard writes a card whole; the primary key keeps one card per
// user and type.
func (q *Q) PutInsuranceCard(ctx context.Context, accountID int64, c *clinic.InsuranceCard) error {
	raw, err := json.Marshal(c.Fields)
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, `INSERT INTO insurance_cards (account_id, user_id, card_type, fields, modified) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (account_id, user_id, card_type) DO UPDATE SET fields = excluded.fields, modified = excluded.modified`,
		accountID, c.UserID, c.CardType, string(raw), c.Modified)
	return err
}

// DeleteInsuranceCard removes a card.
func (q *Q) DeleteInsuranceCard(ctx context.Context, accountID, userID int64, cardType string) error {
	return q.mustAffect(ctx, "DELETE FROM insurance_cards WHERE account_id = ? AND user_id = ? AND card_type = ?", accountID, userID, cardType)
}

// StartEligibilityCheck marks a check of the card as started now, unless
// one started after notBefore: the conditional UPDATE is the only gate, so
// concurrent requests and other processes cannot both pass it.
func (q *Q) StartEligibilityCheck(ctx context.Context, accountID, userID int64, cardType string, now, notBefore int64) (bool, error) {
	n, err := q.affected(ctx, "UPDATE insurance_cards SET check_started = ? WHERE account_id = ? AND user_id = ? AND card_type = ? AND check_started <= ?",
		now, accountID, userID, cardType, notBefore)
	return n == 1, err
}

// CreateEligibilityJob inserts a job and sets its id.
func (q *Q) CreateEligibilityJob(ctx context.Context, accountID int64, j *clinic.EligibilityJob) error {
	var err error
	j.ID, err = q.insert(ctx, "INSERT INTO eligibility_jobs (account_id, user_id, card_type, status, started) VALUES (?, ?, ?, ?, ?)",
		accountID, j.UserID, j.CardType, j.Status, j.Started)
	return err
}

// FinishEligibilityJob records a pending job's outcome; a job already
// finished is left as it is.
func (q *Q) FinishEligibilityJob(ctx context.Context, accountID, id int64, status string, details map[string]any, now int64) error {
	raw, err := json.Marshal(details)
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, "UPDATE eligibility_jobs SET status = ?, details = ?, finished = ? WHERE account_id = ? AND id = ? AND finished = 0",
		status, string(raw), now, accountID, id)
	return err
}

const jobCols = "id, user_id, card_type, status, details, started, finished"

func (q *Q) eligibilityJob(ctx context.Context, query string, args ...any) (*clinic.EligibilityJob, error) {
	var j clinic.EligibilityJob
	var raw string
	if err := q.queryRow(ctx, query, args, &j.ID, &j.UserID, &j.CardType, &j.Status, &raw, &j.Started, &j.Finished); err != nil {
		return nil, err
	}
	return &j, json.Unmarshal([]byte(raw), &j.Details)
}

// EligibilityJobByID finds a job.
func (q *Q) EligibilityJobByID(ctx context.Context, accountID, id int64) (*clinic.EligibilityJob, error) {
	return q.eligibilityJob(ctx, "SELECT "+jobCols+" FROM eligibility_jobs WHERE account_id = ? AND id = ?", accountID, id)
}

// LatestEligibilityJob finds a card's most recent check.
func (q *Q) LatestEligibilityJob(ctx context.Context, accountID, userID int64, cardType string) (*clinic.EligibilityJob, error) {
	return q.eligibilityJob(ctx, "SELECT "+jobCols+" FROM eligibility_jobs WHERE account_id = ? AND user_id = ? AND card_type = ? ORDER BY id DESC LIMIT 1",
		accountID, userID, cardType)
}

// ClaimVisit is a visit of the claims report with its claim codes (JSON).
type ClaimVisit struct {
	*clinic.Visit
	Codes string
}

// claimWhen is when a visit took place for the claims report: started,
// else scheduled, else created. The index visits_claim_time is on this
// expression, written the same.
const claimWhen = "CASE WHEN COALESCE(v.actual_start, 0) > 0 THEN v.actual_start WHEN v.starts_at > 0 THEN v.starts_at ELSE v.created END"

// ClaimQuery selects the visits of the claims report: those of the clinic
// (and of ProviderID, unless 0) that took place in [From, To), after the
// place After names (nil: from the first), Limit of them.
type ClaimQuery struct {
	AccountID, ProviderID int64
	From, To              int64
	After                 *ClaimPlace
	Limit                 int
}

// ClaimPlace is a visit's place in the claims report's order: when it took
// place, then its id.
type ClaimPlace struct{ When, ID int64 }

// ClaimVisits lists the visits of a date range for the claims report, with
// their codes, by when they took place, oldest first (then by id), in the
// order of visits_claim_time.
func (q *Q) ClaimVisits(ctx context.Context, cq ClaimQuery) ([]ClaimVisit, error) {
	lq := claimVisitsQuery(cq)
	rows, err := q.query(ctx, lq.query, lq.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ClaimVisit{}
	for rows.Next() {
		var cv ClaimVisit
		if cv.Visit, err = scanVisit(extraScan{rows, []any{&cv.Codes}}); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, cv)
	}
	return out, q.d.translate(rows.Err())
}

func claimVisitsQuery(cq ClaimQuery) listQuery {
	query := "SELECT " + visitCols + ", v.claim_codes FROM visits v WHERE v.account_id = ? AND " + claimWhen + " >= ? AND " + claimWhen + " < ?"
	args := []any{cq.AccountID, cq.From, cq.To}
	if cq.ProviderID != 0 {
		query += " AND v.provider_id = ?"
		args = append(args, cq.ProviderID)
	}
	if cq.After != nil {
		query += " AND " + claimWhen + " >= ? AND (" + claimWhen + " > ? OR v.id > ?)"
		args = append(args, cq.After.When, cq.After.When, cq.After.ID)
	}
	return listQuery{query + " ORDER BY " + claimWhen + ", v.id LIMIT ?", append(args, cq.Limit)}
}

// ClaimPlaceOf is the place of the clinic's visit id in the claims
// report's order.
func (q *Q) ClaimPlaceOf(ctx context.Context, accountID, visitID int64) (*ClaimPlace, error) {
	pl := ClaimPlace{ID: visitID}
	err := q.queryRow(ctx, "SELECT "+claimWhen+" FROM visits v WHERE v.account_id = ? AND v.id = ?", []any{accountID, visitID}, &pl.When)
	if err != nil {
		return nil, err
	}
	return &pl, nil
}

// extraScan scans a row's leading columns through a shared scanner and its
// trailing columns into extra.
type extraScan struct {
	rows  *sql.Rows
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.rows.Scan(append(dest, e.extra...)...) }

// VisitClaimCodes returns a visit's claim codes (JSON), "" when none.
func (q *Q) VisitClaimCodes(ctx context.Context, accountID, visitID int64) (string, error) {
	var s string
	err := q.queryRow(ctx, "SELECT claim_codes FROM visits WHERE account_id = ? AND id = ?", []any{accountID, visitID}, &s)
	return s, err
}

// SetVisitClaimCodes stores a visit's claim codes (JSON).
func (q *Q) SetVisitClaimCodes(ctx context.Context, accountID, visitID int64, codes string, now int64) error {
	return q.mustAffect(ctx, "UPDATE visits SET claim_codes = ?, modified = ? WHERE account_id = ? AND id = ?", codes, now, accountID, visitID)
}
