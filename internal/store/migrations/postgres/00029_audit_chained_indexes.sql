-- +goose Up
-- The trail's indexes hold the entries in the chain (and those written
-- before it, seq 0), not the pending ones (seq -1). An audited write's
-- entry is then its row and its place in audit_pending, two B-trees in
-- the writer's transaction instead of six; the chainer, which gives the
-- entry its place, adds it to these in its own transaction, many entries
-- a commit. A SQLite message post at 64 connections went from 33% to 36%
-- of the bare insert, medians of 5 rounds (docs/performance.md, "The
-- trail's indexes after the chain"). The lists that read them ask for
-- seq >= 0 (or seq > 0) and chain the clinic's pending entries first
-- (Store.SettleAudits).
DROP INDEX audit_account_created_id;
DROP INDEX audit_account_object;
DROP INDEX audit_account_actor;
DROP INDEX audit_account_seq;
CREATE INDEX audit_account_created_id ON audit (account_id, created, id) WHERE seq >= 0;
CREATE INDEX audit_account_object ON audit (account_id, object_type, object_id) WHERE seq >= 0;
CREATE INDEX audit_account_actor ON audit (account_id, actor_user_id) WHERE seq >= 0;
CREATE INDEX audit_account_seq ON audit (account_id, seq) WHERE seq > 0;
-- The entries from before the chain, which a page of the whole trail
-- counts beside the chain's length (AuditFilter.count); no entry is
-- written with seq 0 any more, so no write touches it.
CREATE INDEX audit_legacy ON audit (account_id) WHERE seq = 0;

-- +goose Down
DROP INDEX audit_legacy;
DROP INDEX audit_account_seq;
DROP INDEX audit_account_actor;
DROP INDEX audit_account_object;
DROP INDEX audit_account_created_id;
CREATE INDEX audit_account_created_id ON audit (account_id, created, id);
CREATE INDEX audit_account_object ON audit (account_id, object_type, object_id);
CREATE INDEX audit_account_actor ON audit (account_id, actor_user_id);
CREATE INDEX audit_account_seq ON audit (account_id, seq);
