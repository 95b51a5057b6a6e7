-- +goose Up
-- A guest's stored bytes, and the bytes a clinic's guests stored in a day,
-- are summed on each guest upload (the upload quotas).
CREATE INDEX files_creator ON files (account_id, creator_user_id, created);

-- +goose Down
DROP INDEX files_creator;
