package app

import (
	"context"
	"errors"
	"fmt"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Room list paging.
const (
	DefaultRoomLimit = 20
	MaxRoomLimit     = 100
)

// ListRooms is GET /rooms: page is 1-based.
func (a *App) ListRooms(ctx context.Context, p *clinic.Principal, page, limit int) ([]clinic.Room, int, error) {
	if page < 0 || limit < 0 {
		return nil, 0, clinic.Errorf(clinic.EInvalid, "page and limit must not be negative.")
	}
	page = max(page, 1)
	if limit == 0 {
		limit = DefaultRoomLimit
	}
	limit = min(limit, MaxRoomLimit)
	rooms, total, err := a.store.Read().ListRooms(ctx, p.Account.ID, (page-1)*limit, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list rooms: %w", err)
	}
	return rooms, total, nil
}

// EnsureRoom creates a room with this code unless it exists (demo seeding).
func (a *App) EnsureRoom(ctx context.Context, p *clinic.Principal, code, name string) (*clinic.Room, error) {
	r, err := a.store.Read().RoomByCode(ctx, p.Account.ID, code)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	now := a.unix()
	r = &clinic.Room{AccountID: p.Account.ID, Code: code, Slug: code, Name: name, Domain: p.Account.Domain, Active: true, Created: now, Modified: now}
	return r, storeErr("create room", a.store.Write().CreateRoom(ctx, r), "")
}
