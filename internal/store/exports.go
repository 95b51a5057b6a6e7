package store

import (
	"context"
	"encoding/json"
	"strings"

	"teleclinic/internal/clinic"
)

const exportCols = "id, account_id, client_id, level, group_id, types, since, request, status, progress, output, error, created, finished, expires"

// CreateExportJob stores j.
func (q *Q) CreateExportJob(ctx context.Context, j *clinic.ExportJob) error {
	out, err := json.Marshal(j.Output)
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, "INSERT INTO export_jobs ("+exportCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		j.ID, j.AccountID, j.ClientID, j.Level, j.GroupID, strings.Join(j.Types, ","), j.Since, j.Request, j.Status, j.Progress,
		string(out), j.Error, j.Created, j.Finished, j.Expires)
	return err
}

// ExportJob is one of a clinic's export jobs.
func (q *Q) ExportJob(ctx context.Context, accountID int64, id string) (*clinic.ExportJob, error) {
	var j clinic.ExportJob
	var types, out string
	err := q.queryRow(ctx, "SELECT "+exportCols+" FROM export_jobs WHERE account_id = ? AND id = ?", []any{accountID, id},
		&j.ID, &j.AccountID, &j.ClientID, &j.Level, &j.GroupID, &types, &j.Since, &j.Request, &j.Status, &j.Progress, &out, &j.Error, &j.Created, &j.Finished, &j.Expires)
	if err != nil {
		return nil, err
	}
	j.Types = fields(types, ",")
	if err := json.Unmarshal([]byte(out), &j.Output); err != nil {
		return nil, err
	}
	return &j, nil
}

// SetExportProgress records how far a running job is.
func (q *Q) SetExportProgress(ctx context.Context, accountID int64, id, status, progress string) error {
	_, err := q.exec(ctx, "UPDATE export_jobs SET status = ?, progress = ? WHERE account_id = ? AND id = ? AND status IN ('accepted', 'running')",
		status, progress, accountID, id)
	return err
}

// FinishExportJob records a job's end: its files, or its error. False when
// the job was cancelled (or had ended) meanwhile: its files are the
// caller's to remove.
func (q *Q) FinishExportJob(ctx context.Context, accountID int64, id, status string, output []clinic.ExportFile, errText string, now int64) (bool, error) {
	out, err := json.Marshal(output)
	if err != nil {
		return false, err
	}
	n, err := q.affected(ctx, "UPDATE export_jobs SET status = ?, output = ?, error = ?, finished = ?, progress = '' WHERE account_id = ? AND id = ? AND status IN ('accepted', 'running')",
		status, string(out), errText, now, accountID, id)
	return n == 1, err
}

// CancelExportJob marks a job cancelled, whatever its state, and answers
// it as it was (its files are the caller's to remove).
func (q *Q) CancelExportJob(ctx context.Context, accountID int64, id string, now int64) (*clinic.ExportJob, error) {
	j, err := q.ExportJob(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	_, err = q.exec(ctx, "UPDATE export_jobs SET status = 'cancelled', finished = ? WHERE account_id = ? AND id = ?", now, accountID, id)
	return j, err
}

// ExpiredExportJobs are jobs whose files are past their time at now.
func (q *Q) ExpiredExportJobs(ctx context.Context, now int64, limit int) ([]*clinic.ExportJob, error) {
	rows, err := q.query(ctx, "SELECT account_id, id FROM export_jobs WHERE expires <= ? AND status <> 'expired' LIMIT ?", now, limit)
	if err != nil {
		return nil, err
	}
	type key struct {
		account int64
		id      string
	}
	var keys []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.account, &k.id); err != nil {
			rows.Close()
			return nil, err
		}
		keys = append(keys, k)
	}
	rows.Close()
	var out []*clinic.ExportJob
	for _, k := range keys {
		j, err := q.ExportJob(ctx, k.account, k.id)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// ExpireExportJob marks a job's files gone.
func (q *Q) ExpireExportJob(ctx context.Context, accountID int64, id string) error {
	_, err := q.exec(ctx, "UPDATE export_jobs SET status = 'expired', output = '[]' WHERE account_id = ? AND id = ?", accountID, id)
	return err
}

// PatientIDsAfter is a page of the clinic's patients' ids (members and
// guests), in order, after the id after.
func (q *Q) PatientIDsAfter(ctx context.Context, accountID, after int64, limit int) ([]int64, error) {
	return q.int64s(ctx, "SELECT id FROM users WHERE account_id = ? AND type IN (?, ?) AND id > ? ORDER BY id LIMIT ?",
		accountID, clinic.UserMember, clinic.UserGuest, after, limit)
}

// RoomPatientIDsAfter is a page of the ids of the patients with an intake
// in a room (its Group), in order, after the id after.
func (q *Q) RoomPatientIDsAfter(ctx context.Context, accountID, roomID, after int64, limit int) ([]int64, error) {
	return q.int64s(ctx, "SELECT DISTINCT member_id FROM intakes WHERE account_id = ? AND room_id = ? AND member_id > ? ORDER BY member_id LIMIT ?",
		accountID, roomID, after, limit)
}
