package store

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"teleclinic/internal/clinic"
)

const fileCols = "id, account_id, creator_user_id, category, target_type, target_id, COALESCE(intake_id, 0), name, title, description, size, ext, content_type, blob_key, created"

func scanFile(row interface{ Scan(...any) error }) (*clinic.File, error) {
	var f clinic.File
	err := row.Scan(&f.ID, &f.AccountID, &f.CreatorUserID, &f.Category, &f.TargetType, &f.TargetID, &f.IntakeID,
		&f.Name, &f.Title, &f.Description, &f.Size, &f.Ext, &f.ContentType, &f.BlobKey, &f.Created)
	return &f, err
}

// FileByID finds a file of the clinic.
func (q *Q) FileByID(ctx context.Context, accountID, id int64) (*clinic.File, error) {
	return q.oneFile(ctx, "SELECT "+fileCols+" FROM files WHERE account_id = ? AND id = ?", accountID, id)
}

// FileForLink finds a file by id alone. Only a view link whose signature
// over the id has been checked may call it: the signature, not a clinic
// header, is what names the file there.
func (q *Q) FileForLink(ctx context.Context, id int64) (*clinic.File, error) {
	return q.oneFile(ctx, "SELECT "+fileCols+" FROM files WHERE id = ?", id)
}

func (q *Q) oneFile(ctx context.Context, query string, args ...any) (*clinic.File, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	fs, err := scanFiles(rows)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, ErrNotFound
	}
	return fs[0], nil
}

func scanFiles(rows *sql.Rows) ([]*clinic.File, error) {
	defer rows.Close()
	var out []*clinic.File
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// GuestUploads are the bytes of the files guest userID made, and of those
// all the clinic's guests made since since.
func (q *Q) GuestUploads(ctx context.Context, accountID, userID, since int64) (mine, clinicDay int64, err error) {
	err = q.queryRow(ctx, `SELECT
		COALESCE((SELECT SUM(size) FROM files WHERE account_id = ? AND creator_user_id = ?), 0),
		COALESCE((SELECT SUM(f.size) FROM files f JOIN users u ON u.account_id = f.account_id AND u.id = f.creator_user_id
			WHERE f.account_id = ? AND f.created >= ? AND u.type = ?), 0)`,
		[]any{accountID, userID, accountID, since, clinic.UserGuest}, &mine, &clinicDay)
	return mine, clinicDay, err
}

// CreateFile inserts a file row and sets f.ID.
func (q *Q) CreateFile(ctx context.Context, f *clinic.File) error {
	var intake any
	if f.IntakeID != 0 {
		intake = f.IntakeID
	}
	id, err := q.insert(ctx, "INSERT INTO files (account_id, creator_user_id, category, target_type, target_id, intake_id, name, title, description, size, ext, content_type, blob_key, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		f.AccountID, f.CreatorUserID, f.Category, f.TargetType, f.TargetID, intake, f.Name, f.Title, f.Description, f.Size, f.Ext, f.ContentType, f.BlobKey, f.Created)
	f.ID = id
	return err
}

// CreateFileRecord inserts a file row without content (tests of rules that
// only need a file to exist).
func (q *Q) CreateFileRecord(ctx context.Context, accountID, creator int64, category, targetType string, targetID int64, name string, now int64) (int64, error) {
	f := &clinic.File{AccountID: accountID, CreatorUserID: creator, Category: category, TargetType: targetType, TargetID: targetID, Name: name, Created: now}
	err := q.CreateFile(ctx, f)
	return f.ID, err
}

// UpdateFileText changes a file's name, title and description.
func (q *Q) UpdateFileText(ctx context.Context, f *clinic.File) error {
	_, err := q.exec(ctx, "UPDATE files SET name = ?, title = ?, description = ? WHERE account_id = ? AND id = ?",
		f.Name, f.Title, f.Description, f.AccountID, f.ID)
	return err
}

// DeleteFile removes a file's row, and its use as a profile photo.
func (q *Q) DeleteFile(ctx context.Context, accountID, id int64) error {
	if _, err := q.exec(ctx, "UPDATE users SET photo_file_id = NULL WHERE account_id = ? AND photo_file_id = ?", accountID, id); err != nil {
		return err
	}
	_, err := q.exec(ctx, "DELETE FROM files WHERE account_id = ? AND id = ?", accountID, id)
	return err
}

// FileFilter selects files of one target.
type FileFilter struct {
	AccountID  int64
	TargetType string
	TargetID   int64
	Category   string
	// SharedVisitsOf also takes the files of this patient's visits.
	SharedVisitsOf int64
	// NotCategory leaves out the files of this category.
	NotCategory string
	// Before pages the list: files with ids below it (0: from the newest).
	Before int64
	Limit  int
}

// ListFiles lists a target's files, newest first.
func (q *Q) ListFiles(ctx context.Context, f FileFilter) ([]*clinic.File, error) {
	where := []string{"account_id = ?"}
	args := []any{f.AccountID}
	target := "(target_type = ? AND target_id = ?)"
	targs := []any{f.TargetType, f.TargetID}
	if f.SharedVisitsOf != 0 {
		target = "(" + target + " OR (target_type = 'visit' AND target_id IN (SELECT id FROM visits WHERE account_id = ? AND member_id = ?)))"
		targs = append(targs, f.AccountID, f.SharedVisitsOf)
	}
	where = append(where, target)
	args = append(args, targs...)
	if f.Category != "" {
		where = append(where, "category = ?")
		args = append(args, f.Category)
	}
	if f.NotCategory != "" {
		where = append(where, "category <> ?")
		args = append(args, f.NotCategory)
	}
	if f.Before != 0 {
		where = append(where, "id < ?")
		args = append(args, f.Before)
	}
	rows, err := q.query(ctx, "SELECT "+fileCols+" FROM files WHERE "+strings.Join(where, " AND ")+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	return scanFiles(rows)
}

// FilesWindow is a window of the files of a patient's record a reader
// sees, newest first, and how many the window's time range holds (by
// upload): the patient's own files, the files of the patient's visits rv
// selects, and those of the patient's visits that creator uploaded (0:
// none). It is a FHIR record's DocumentReferences; the reader may read the
// record (app.recordOwner).
func (q *Q) FilesWindow(ctx context.Context, rv RecordVisits, creator int64, w RecordWindow) ([]*clinic.File, int, error) {
	count, page := filesWindow(rv, creator, w)
	return readWindow(ctx, q, w, count, page, -1, func(rows *sql.Rows) (*clinic.File, error) { return scanFile(rows) })
}

func filesWindow(rv RecordVisits, creator int64, w RecordWindow) (count, page listQuery) {
	vc, vargs := rv.cond()
	cond := "f.account_id = ? AND ((f.target_type = 'user' AND f.target_id = ?) OR (f.target_type = 'visit' AND (f.target_id IN (SELECT v.id FROM visits v WHERE " + vc + ")"
	args := append([]any{rv.AccountID, rv.MemberID}, vargs...)
	if creator != 0 {
		cond += " OR (f.creator_user_id = ? AND f.target_id IN (SELECT v.id FROM visits v WHERE v.account_id = ? AND v.member_id = ?))"
		args = append(args, creator, rv.AccountID, rv.MemberID)
	}
	cond += ")))"
	wc, wargs := w.where("f.id", "f.created", 1)
	from := " FROM files f WHERE " + cond + wc
	args = append(args, wargs...)
	// fileCols name files' columns alone: the visits are only in the
	// WHERE's subqueries.
	return listQuery{"SELECT count(*)" + from, args},
		listQuery{"SELECT " + fileCols + from + " ORDER BY f.id DESC LIMIT ? OFFSET ?", append(slices.Clip(args), w.Limit, w.Offset)}
}
