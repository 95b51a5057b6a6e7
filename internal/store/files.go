package store

import "context"

// FileRef is the little the profile needs to know about a file.
type FileRef struct {
	ID            int64
	CreatorUserID int64
	Category      string
	TargetType    string
	TargetID      int64
	Name          string
	Size          int64
	Ext           string
}

// FileByID finds a file of the clinic.
func (q *Q) FileByID(ctx context.Context, accountID, id int64) (*FileRef, error) {
	var f FileRef
	err := q.queryRow(ctx, "SELECT id, creator_user_id, category, target_type, target_id, name, size, ext FROM files WHERE account_id = ? AND id = ?",
		[]any{accountID, id}, &f.ID, &f.CreatorUserID, &f.Category, &f.TargetType, &f.TargetID, &f.Name, &f.Size, &f.Ext)
	return &f, err
}

// CreateFileRecord inserts a file row without content. The files feature
// will own this; until then it lets the profile photo rule be exercised.
func (q *Q) CreateFileRecord(ctx context.Context, accountID, creator int64, category, targetType string, targetID int64, name string, now int64) (int64, error) {
	return q.insert(ctx, "INSERT INTO files (account_id, creator_user_id, category, target_type, target_id, name, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
		accountID, creator, category, targetType, targetID, name, now)
}
