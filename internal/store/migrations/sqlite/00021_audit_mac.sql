-- +goose Up
-- Each audit entry's MAC (docs/design-notes.md, "A tamper-evident audit
-- trail"): "v1.<nonce>.<hmac>" over the entry's content, made by the
-- server when it writes the entry, so a row inserted by SQL (a forged
-- pending entry) is refused before it can be chained. Entries from before
-- this migration have '' and are protected by the chain alone. seq -2
-- marks a pending entry the chainer refused.
ALTER TABLE audit ADD COLUMN mac TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE audit DROP COLUMN mac;
